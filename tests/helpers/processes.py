"""Child processes the tests start in their own process group (servers built or installed for the tests)."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the process's group (SIGTERM, then SIGKILL after 20 s) and wait for it; nothing if it has exited."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)
