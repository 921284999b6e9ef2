"""One traced tool call under each peer's decorator beside ours, as ratios to each process's bare span.

Run it as a script, after ``bash bench/peers/setup.sh`` (once)::

    .venv/bin/python bench/bench_peers.py            # about a minute on 2 cores
    .venv/bin/python bench/bench_peers.py --quick    # smaller sizes
    .venv/bin/python bench/bench_peers.py --json out.json
    .venv/bin/python bench/bench_peers.py --breakdown   # also where ours' time goes, parts timed alone

Each peer runs in its own virtual environment (``${AGENT_REPLAY_PEERS_DIR:-~/.cache/otel-agent-replay/peers}``):
this script starts ``bench/peers/run_<peer>.py`` with that environment's python, one after the
other, then ``bench/peers/run_ours.py`` with this repo's python. Each child measures, in its own
process, the bare span (``start_as_current_span("x")`` on a ``BatchSpanProcessor`` to a discarding
exporter) before and after, and ``search(customer_id="c_17", limit=20)`` returning the same ~4 KB
result under its decorator; every ratio is to the bare span of the same process. A peer whose
environment is missing is reported as not run. See bench/README.md, "Against the peers (issue 15)".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import benchlib

HERE = Path(__file__).resolve().parent
PEERS_DIR = Path(os.environ.get("AGENT_REPLAY_PEERS_DIR") or Path.home() / ".cache/otel-agent-replay/peers")
PEERS = ("openinference", "traceloop", "logfire")
OURS = "ours"


def child_env() -> dict[str, str]:
    """The children's environment: no peer telemetry, nothing pointed at a remote host."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACELOOP_", "LOGFIRE_", "OTEL_EXPORTER_"))}
    env.update(TRACELOOP_TELEMETRY="false", LOGFIRE_SEND_TO_LOGFIRE="false", OTEL_SDK_DISABLED="false")
    return env


def run_child(name: str, python: Path, quick: bool, extra: Sequence[str] = ()) -> dict[str, Any]:
    script = HERE / "peers" / f"run_{name}.py"
    cmd = [str(python), str(script), *(["--quick"] if quick else []), *extra]
    print(f"[{datetime.now(timezone.utc):%H:%M:%S}] {name}: {python}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=900, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"peer": name, "error": f"exit {proc.returncode}: {' | '.join(tail)}"}
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def render(results: list[dict[str, Any]]) -> str:
    head = (
        "| decorator (package) | traced call µs (spread) | bare span µs, same process | ratio to bare "
        "| spans made / exported |"
    )
    rows = [head, "|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['peer']} | not run: {r['error']} | | | |")
            continue
        pkgs = ", ".join(f"{k} {v}" for k, v in r["packages"].items())
        rows.append(
            f"| {r['peer']}: `{r['decorator']}` ({pkgs}) | {r['call']['median_us']:.1f} ({r['call_spread_us']}) "
            f"| {r['bare_us']:.1f} (drift {r['bare_drift_percent']:+.1f}%) | **{r['ratio']:.2f}×** "
            f"| {r['spans_made']:,} / {r['spans_exported']:,} |"
        )
    return "\n".join(rows)


def verdict(results: list[dict[str, Any]]) -> str:
    ours = next((r for r in results if r.get("peer", "").startswith("ours") and "error" not in r), None)
    peers = [r for r in results if "error" not in r and r is not ours]
    if ours is None or not peers:
        return "verdict: not available (ours or every peer did not run)"
    fastest = min(peers, key=lambda r: r["ratio"])
    fastest_us = min(peers, key=lambda r: r["call"]["median_us"])
    ahead = ours["ratio"] < fastest["ratio"]
    return (
        f"verdict: ours {ours['ratio']:.2f}× vs the fastest peer {fastest['peer']} {fastest['ratio']:.2f}× "
        f"(by µs: ours {ours['call']['median_us']:.1f} vs {fastest_us['peer']} {fastest_us['call']['median_us']:.1f}): "
        f"ours is {'AHEAD' if ahead else 'NOT ahead'} of the fastest peer"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (5 repetitions)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument(
        "--breakdown", action="store_true", help="also time the parts of ours' traced call alone (after its row)"
    )
    args = parser.parse_args(argv)
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_start = benchlib.loadavg()
    results: list[dict[str, Any]] = []
    for name in PEERS:
        python = PEERS_DIR / name / "bin" / "python"
        if not (PEERS_DIR / name / ".installed").exists():
            results.append({"peer": name, "error": f"no environment at {PEERS_DIR / name} (run bench/peers/setup.sh)"})
            continue
        results.append(run_child(name, python, args.quick))
    results.append(run_child(OURS, Path(sys.executable), args.quick, ["--breakdown"] if args.breakdown else []))
    load_end = benchlib.loadavg()
    print(f"run {started}, load average {load_start} at start, {load_end} at end; {os.cpu_count()} CPUs")
    print(render(results))
    for r in results:
        for note in r.get("notes", []):
            print(f"- {r['peer']}: {note}")
    print(
        "Peers export through a BatchSpanProcessor (a queue and a background thread; a full queue drops "
        "spans); ours writes every step synchronously and losslessly to the tape on disk."
    )
    print(verdict(results))
    if args.json:
        data = {"date": started, "loadavg_start": load_start, "loadavg_end": load_end, "results": results}
        args.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
