"""A replayed hit and a replayed HTTP GET in instructions per call, under callgrind, beside their references.

Run it as a script (not a test; valgrind must be installed)::

    .venv/bin/python bench/callgrind_hit.py                       # every configuration, about 10 minutes
    .venv/bin/python bench/callgrind_hit.py --only bare hit-on    # some of them

Instruction counts do not depend on the machine's load, so this is the figure to compare a change by
on a shared machine (``bench_replay.py`` §1 and ``bench_vcr.py`` time the same calls). Each
configuration runs twice under ``valgrind --tool=callgrind`` (200 warm-up calls, then 300 or 1,300), and
its figure is (the long run - the short run) / 1,000: the interpreter's start, the imports and the
warm-up cancel out. Configurations (all inside one process each, the replay spans to a
``BatchSpanProcessor`` with a discarding exporter, whose worker thread callgrind counts too):

- ``bare``: ``bench_replay.py``'s bare span (``start_as_current_span("x")``, no attributes);
- ``hit-on`` / ``hit-off``: ``bench_replay.py``'s document hit, replay spans on / ``spans=False``;
- ``sdk-span``: the SDK's own part of a hit's replay span: ``start_span`` with a replayed document step's
  contract attributes and its link, then ``end`` (as ``HitSpan`` makes it: no context attached), nothing of
  ours in the loop;
- ``requests-*`` / ``httpx-*``: ``bench_vcr.py``'s GET: ``memory`` (the client's own work on an
  in-memory response), ``on`` / ``off`` (replayed from a tape, spans on / off), ``vcrpy`` (vcrpy's replay
  from a cassette), ``floor`` (``bench_vcr.py``'s floor: the client around a transport that does nothing).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from pathlib import Path
from typing import Any

import callgrindlib

WARMUP = 200
SHORT, LONG = 300, 1_300
CONFIGS = (
    "bare",
    "hit-on",
    "hit-off",
    "sdk-span",
    "requests-memory",
    "requests-on",
    "requests-off",
    "requests-vcrpy",
    "requests-floor",
    "httpx-memory",
    "httpx-on",
    "httpx-off",
    "httpx-vcrpy",
    "httpx-floor",
)


def _provider() -> Any:
    """The application's provider, as ``benchlib.BenchBase`` sets it: a batch processor, a discarding exporter."""
    from benchlib import DiscardExporter
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter()))
    trace.set_tracer_provider(provider)
    return provider


def build(work: Path) -> None:
    """The hit tape (document steps) and, per client, the GET's tape and cassette, from a local server."""

    import bench_vcr
    import vcr
    from bench_record import LIMIT, QUERY, search_document
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    from otel_agent_replay import agent_run, record

    trace.set_tracer_provider(TracerProvider())
    with record(work / "hit.jsonl"), agent_run("bench"):
        for _ in range(WARMUP + LONG):
            search_document(query=QUERY, limit=LIMIT)
    server, url = bench_vcr.serve()
    try:
        for name, (get, _) in bench_vcr._clients(url).items():
            with record(work / f"{name}.jsonl"):
                for _ in range(WARMUP + LONG):
                    get()
            with vcr.use_cassette(str(work / f"{name}.yaml"), record_mode="once"):
                get()
    finally:
        server.shutdown()
        server.server_close()
    (work / "url").write_text(url)


def child(config: str, work: Path, n: int) -> None:
    """What runs under callgrind: ``WARMUP`` calls of ``config``, then ``n`` more."""
    provider = _provider()
    block: Callable[[], AbstractContextManager[Any]]
    if config == "bare":
        start = provider.get_tracer("bench.bare").start_as_current_span

        def call() -> object:
            with start("x"):
                return None

        block = nullcontext
    elif config == "sdk-span":
        from bench_record import LIMIT, QUERY, search_document

        from otel_agent_replay import agent_run, load_tape, replay
        from otel_agent_replay.instrumentation import prepare, step_attributes, tool_spec
        from otel_agent_replay.instrumentation._runtime import current_run
        from otel_agent_replay.replayer._serving import step_links

        tape = load_tape(work / "hit.jsonl")
        step = tape.runs[0].steps[0]
        spec = tool_spec(search_document)
        assert spec is not None and step.result_json is not None
        with replay(tape, allow_unused=True), agent_run("bench"):
            state = current_run.get()
            assert state is not None
            name, attrs = step_attributes(spec, prepare(spec, state, (), {"query": QUERY, "limit": LIMIT}))
        attrs["gen_ai.tool.call.result"] = step.result_json
        links = step_links(step)
        start = provider.get_tracer("bench.sdk").start_span

        def call() -> object:
            start(name, attributes=attrs, links=links, start_time=1).end()
            return None

        block = nullcontext
    elif config.startswith("hit-"):
        from bench_record import LIMIT, QUERY, search_document

        from otel_agent_replay import agent_run, load_tape, replay

        tape = load_tape(work / "hit.jsonl")
        spans = config == "hit-on"

        def call() -> object:
            return search_document(query=QUERY, limit=LIMIT)

        def block() -> AbstractContextManager[Any]:
            stack = ExitStack()
            stack.enter_context(replay(tape, spans=spans, allow_unused=True))
            stack.enter_context(agent_run("bench"))
            return stack
    else:
        import bench_vcr

        client, how = config.split("-")
        url = (work / "url").read_text()
        get, memory = bench_vcr._clients(url)[client]
        call = {"memory": memory, "floor": bench_vcr._floors(url)[client]}.get(how, get)
        if how in ("on", "off"):
            from otel_agent_replay import replay

            tape_path = work / f"{client}.jsonl"

            def block() -> AbstractContextManager[Any]:
                return replay(tape_path, spans=how == "on", allow_unused=True)
        elif how == "vcrpy":
            import vcr

            cassette = str(work / f"{client}.yaml")

            def block() -> AbstractContextManager[Any]:
                return vcr.use_cassette(cassette, record_mode="none", allow_playback_repeats=True)
        else:
            block = nullcontext
    with block():
        for _ in range(WARMUP + n):
            call()
    provider.shutdown()


def instructions(config: str, work: Path, n: int) -> int:
    """Instructions of one child run under callgrind (every thread)."""
    return callgrindlib.instructions(__file__, "--child", config, str(work), str(n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=CONFIGS, default=list(CONFIGS))
    parser.add_argument("--calls", type=int, default=LONG - SHORT, help="calls counted (long run - short run)")
    parser.add_argument("--child", nargs=3, metavar=("CONFIG", "DIR", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 0 < args.calls <= LONG - SHORT:
        parser.error(f"--calls counts at most {LONG - SHORT} calls (the tapes hold {WARMUP + LONG} steps)")
    if args.child:
        child(args.child[0], Path(args.child[1]), int(args.child[2]))
        return 0
    per_call: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="callgrind-hit-") as folder:
        work = Path(folder)
        subprocess.run([sys.executable, __file__, "--child", "build", folder, "0"], check=True)
        long = SHORT + args.calls
        print(f"instructions per call (callgrind; ({long} calls - {SHORT} calls) / {args.calls})")
        for config in args.only:
            per_call[config] = (instructions(config, work, long) - instructions(config, work, SHORT)) / args.calls
            print(f"  {config:<16} {per_call[config]:>10,.0f}", flush=True)
    ratios = [
        ("hit-on", "bare", "hit, spans on, × bare span"),
        ("hit-off", "bare", "hit, spans off, × bare span"),
        ("sdk-span", "bare", "SDK span of a hit, × bare span"),
    ]
    for client in ("requests", "httpx"):
        for how in ("on", "off"):
            ratios.append((f"{client}-vcrpy", f"{client}-{how}", f"{client} vcrpy / tape, spans {how}"))
            ratios.append((f"{client}-{how}", f"{client}-memory", f"{client} tape, spans {how}, × memory"))
        ratios.append((f"{client}-floor", f"{client}-memory", f"{client} floor × memory"))
        ratios.append((f"{client}-vcrpy", f"{client}-floor", f"{client} vcrpy / floor (the ceiling)"))
    for top, bottom, label in ratios:
        if top in per_call and bottom in per_call:
            print(f"  {label:<34} {per_call[top] / per_call[bottom]:6.2f}x")
    return 0


if __name__ == "__main__":
    if sys.argv[1:3] == ["--child", "build"]:
        build(Path(sys.argv[3]))
        sys.exit(0)
    sys.exit(main())
