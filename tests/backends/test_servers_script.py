"""scripts/servers.sh: a cached build is a no-op, and a failed build names its step and keeps its log."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.go_servers import ROOT, server_binary

SCRIPT = ROOT / "scripts" / "servers.sh"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=600
    )


def test_a_cached_build_is_a_no_op(tmp_path: Path) -> None:
    jaeger, otelcol = server_binary("AGENT_REPLAY_JAEGER"), server_binary("AGENT_REPLAY_OTELCOL")
    gitleaks = server_binary("AGENT_REPLAY_GITLEAKS")
    cache = jaeger.parent.parent
    before = {p: p.stat().st_mtime_ns for p in (jaeger, otelcol, gitleaks)}
    shims, called = tmp_path / "bin", tmp_path / "go-was-called"
    shims.mkdir()
    go = shims / "go"  # a `go` that notes it was run: a cached build runs no Go command at all
    go.write_text(f'#!/bin/sh\necho "$@" >> {called}\nexit 1\n')
    go.chmod(0o755)
    path = f"{shims}{os.pathsep}{os.environ.get('PATH', '')}"
    done = _run("build", AGENT_REPLAY_CACHE=str(cache), GOPROXY="off", PATH=path)  # nothing may be fetched …
    assert done.returncode == 0 and done.stderr == "" and done.stdout == "", done.stderr
    assert not called.exists(), f"a cached build ran go {called.read_text() if called.exists() else ''}"
    assert {p: p.stat().st_mtime_ns for p in before} == before  # … nor rebuilt
    assert _run("path", "jaeger", AGENT_REPLAY_CACHE=str(cache)).stdout.strip() == str(jaeger)
    assert _run("path", "otelcol", AGENT_REPLAY_CACHE=str(cache)).stdout.strip() == str(otelcol)
    assert _run("path", "gitleaks", AGENT_REPLAY_CACHE=str(cache)).stdout.strip() == str(gitleaks)


def test_a_failed_build_names_the_step_and_keeps_the_log(tmp_path: Path) -> None:
    cache, modules = tmp_path / "cache", tmp_path / "modules"
    modules.mkdir()
    done = _run("build", AGENT_REPLAY_CACHE=str(cache), GOPROXY="off", GOMODCACHE=str(modules), GOFLAGS="")
    assert done.returncode == 1
    log = cache / "logs" / "jaeger-2.13.0.log"
    assert "step 1/2 (go mod download github.com/jaegertracing/jaeger@v1.76.0) failed" in done.stderr
    assert str(log) in done.stderr and "GOPROXY=off" in log.read_text()
    assert not (cache / "jaeger-2.13.0").exists()  # no half-built binary is taken for a cached one
