"""The 4 KB recorded step in instructions per step, under callgrind, beside a bare span and its own parts.

Run it as a script (not a test; valgrind must be installed)::

    .venv/bin/python bench/callgrind_step.py                  # every configuration, about 5 minutes
    .venv/bin/python bench/callgrind_step.py --only bare step # some of them

Instruction counts do not depend on the machine's load, so this is the figure to compare a change of the
record path by on a shared machine (``bench_redact_throughput.py`` and ``profile_step.py`` time the same
step). They count the process's own instructions, not the kernel's: the tape's system calls (``flock``,
``stat``, ``pread``, ``write``) show only as their C wrappers, so a change that removes a system call is
timed as well (``profile_step.py --without``). Each configuration runs twice under ``valgrind
--tool=callgrind`` (200 warm-up calls, then 300 or 1,300), and its figure is (the long run - the short
run) / 1,000: the interpreter's start, the imports and the warm-up cancel out. Configurations, each in a
process whose application provider has a ``BatchSpanProcessor`` to a discarding exporter (its worker
thread counts too), as in ``bench_redact_throughput.py``:

- ``bare``: a bare span (``start_as_current_span("x")``, no attributes);
- ``step``: ``@tool`` + ``agent_run`` in ``record(path)`` returning ``redact_corpus.step_rows(50)``;
- ``step-captured``: the same with ``capture_result`` replaced by its answer, computed once (what the
  step costs around the redaction);
- ``capture``: ``capture_result`` of the rows alone.

And, only when named with ``--only``, the parts of that capture, each alone on the same rows' text: ``detector``
(Kingfisher's scan, ``DETECTOR.known_tokens``), ``detector-empty`` (its scan of 16 blank bytes: what a call costs),
``gate`` (the one RE2 search), ``runs`` (``_onepass._run_positions``), ``names`` (``plain_json_names``),
``structure`` (``_onepass.needs_structure``) and ``dump`` (``plain_json_text``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import callgrindlib  # noqa: E402

WARMUP = 200
SHORT, LONG = 300, 1_300
CONFIGS = ("bare", "step", "step-captured", "capture")
PARTS = ("detector", "detector-empty", "gate", "runs", "names", "structure", "dump")


def part(name: str, rows: Any) -> Any:
    """A function running one part of ``capture_result`` of ``rows`` on their text, as the step runs it."""
    import orjson

    from otel_agent_replay.capture import DEFAULT_REDACTOR
    from otel_agent_replay.capture import _onepass as onepass
    from otel_agent_replay.capture._canonical import plain_json_text
    from otel_agent_replay.capture._describe import plain_json_names
    from otel_agent_replay.capture._detector import DETECTOR

    text = orjson.dumps(rows).decode()
    data, names = text.encode("ascii"), plain_json_names(rows)
    compiled = DEFAULT_REDACTOR._compiled
    if name.startswith("detector"):
        DETECTOR.known_tokens("x" * 40)  # the scanner is built before the counted calls
    parts = {
        "detector": lambda: DETECTOR.known_tokens(text, data),
        "detector-empty": lambda: DETECTOR.known_tokens(" " * 16, b" " * 16),
        "gate": lambda: onepass._gate_starts(text, data),
        "runs": lambda: onepass._run_positions(compiled, text, data),
        "names": lambda: plain_json_names(rows),
        "structure": lambda: onepass.needs_structure(compiled, text, names, []),
        "dump": lambda: plain_json_text(rows),
    }
    return parts[name]


def child(config: str, n: int) -> None:
    """What runs under callgrind: ``WARMUP`` calls of ``config``, then ``n`` more."""
    import redact_corpus
    from benchlib import DiscardExporter
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from otel_agent_replay import agent_run, record, tool
    from otel_agent_replay.capture import DEFAULT_CAPTURE, capture_result

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=1 << 20))
    trace.set_tracer_provider(provider)
    rows = redact_corpus.step_rows(50)
    if config in PARTS:
        run = part(config, rows)
        for _ in range(WARMUP + n):
            run()
    elif config == "bare":
        start = provider.get_tracer("bench.bare").start_as_current_span
        for _ in range(WARMUP + n):
            with start("x"):
                pass
    elif config == "capture":
        for _ in range(WARMUP + n):
            capture_result(rows, DEFAULT_CAPTURE)
    else:
        if config == "step-captured":
            import otel_agent_replay.instrumentation._steps as steps

            captured = capture_result(rows, DEFAULT_CAPTURE)

            def fixed(result: Any, capture: Any) -> Any:
                return captured

            steps.capture_result = fixed  # type: ignore[assignment]

        @tool(name="orders", side_effect="read_only")
        def orders(customer_id: str) -> list[dict[str, Any]]:
            return rows

        with (
            tempfile.TemporaryDirectory(prefix="callgrind-step-") as work,
            record(Path(work) / "t.jsonl"),
            agent_run("b"),
        ):
            for _ in range(WARMUP + n):
                orders(customer_id="c_17")
    provider.shutdown()


def instructions(config: str, n: int) -> int:
    """Instructions of one child run under callgrind (every thread)."""
    return callgrindlib.instructions(__file__, "--child", config, str(n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=CONFIGS + PARTS, default=list(CONFIGS))
    parser.add_argument("--child", nargs=2, metavar=("CONFIG", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    per_call: dict[str, float] = {}
    print(f"instructions per call (callgrind; ({LONG} calls - {SHORT} calls) / {LONG - SHORT})")
    for config in args.only:
        per_call[config] = (instructions(config, LONG) - instructions(config, SHORT)) / (LONG - SHORT)
        print(f"  {config:<16} {per_call[config]:>10,.0f}", flush=True)
    if "bare" in per_call:
        for config in ("step", "step-captured", "capture"):
            if config in per_call:
                print(f"  {config} × bare span {per_call[config] / per_call['bare']:17.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
