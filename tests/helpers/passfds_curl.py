"""``curl -X POST`` started by ``multiprocessing.util.spawnv_passfds``, which looks ``_posixsubprocess.fork_exec``
up in its module (no audit event, the child inherits this process's environment): what it was answered."""

from __future__ import annotations

import multiprocessing.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Posted:
    """The curl process and the answer it got: its status and body, as curl wrote them to files."""

    pid: int
    status: int
    body: str


def post_by_spawnv_passfds(url: str, payload: str, folder: Path) -> Posted:
    """POST ``payload`` (JSON) to ``url`` with curl, started by multiprocessing's helper; waits for it."""
    curl = shutil.which("curl")
    assert curl, "curl is needed (apt-get install curl)"
    headers, body = folder / "curl-headers.txt", folder / "curl-body.txt"
    argv = [curl, "-sS", "-X", "POST", "-H", "content-type: application/json", "-d", payload]
    argv += ["-D", str(headers), "-o", str(body), url]
    pid = multiprocessing.util.spawnv_passfds(os.fsencode(curl), argv, ())
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    assert code == 0, f"curl exited {code}"  # an HTTP error is an answer: curl exits 0 without --fail
    status = int(headers.read_text(encoding="utf-8").split()[1])
    return Posted(pid, status, body.read_text(encoding="utf-8"))
