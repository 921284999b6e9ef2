"""What the ``callgrind_*.py`` scripts share: one child run under callgrind, and the instructions it executed.

Instruction counts do not move with the machine's load (other processes' turns are not counted), so the
scripts count a loop at two sizes in two children and take the difference per call.
"""

from __future__ import annotations

import re
import subprocess
import sys

VALGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")
_COLLECTED = re.compile(rb"Collected : (\d+)")


def instructions(script: str, *args: str) -> int:
    """Instructions of ``python script *args`` under callgrind (every thread); exits naming the failure."""
    proc = subprocess.run([*VALGRIND, sys.executable, script, *args], capture_output=True, check=False)
    found = _COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(args)}: callgrind run failed:\n{proc.stderr.decode(errors='replace')[-3000:]}")
    return int(found.group(1))
