"""Cost of recording an agent's tool steps, measured against a bare OpenTelemetry span.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/bench_record.py            # full run, about 2-3 minutes on 2 cores
    .venv/bin/python bench/bench_record.py --quick    # smaller sizes, about 40 seconds
    .venv/bin/python bench/bench_record.py --json out.json

What is measured, all in one process and one run (see bench/README.md for the meaning of each line):

1. a bare span (``start_as_current_span("x")``, no attributes) under a provider whose only
   processor is a ``BatchSpanProcessor`` with a discarding exporter: before and after the
   per-call measurements, the mean being the reference for every ratio;
2. a recorded ``@tool`` step inside ``record(...)`` and ``agent_run(...)`` with a ~4 KB
   result (a document and a list of records), the tape in the default temporary folder, and
   for orientation the same span without our capture and the same step with the tape on tmpfs;
3. the tape exporter's sustained rate on pre-built spans, one span per export and 512 per export;
4. a burst of 100,000 recorded steps: lines on the tape and spans dropped;
5. ``load_tape`` on ~50 MB tapes of small, varied (ids, hashes, URLs, logs) and large spans: MB/s,
   spans/s, peak memory, and ``orjson.loads`` of every line alone beside it;
6. a breakdown of one step into its parts (capture, SDK span, encoding, the write).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import benchlib
import orjson
from benchlib import MB, NS_PER_US, RESULT_ATTRIBUTE, Row, Sample, checked_row, full_quick, time_loop
from opentelemetry.context import Context
from opentelemetry.exporter.agent_replay_tape import LineEncoder, TapeSpanExporter
from opentelemetry.exporter.agent_replay_tape._writer import AppendWriter
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_agent_replay import agent_run, load_tape, record, tool
from otel_agent_replay.capture import DEFAULT_CAPTURE, capture_args, capture_result
from otel_agent_replay.instrumentation import tool_spec

QUERY = "refund policy"
LIMIT = 5

TARGET_STEP_RATIO = 2.5
TARGET_LOAD_MBPS = 400.0
"""Issue 34: ``load_tape`` ≥ 400 MB/s on 1.8 KB spans (issues 15 and 20 asked 250)."""
TARGET_LOAD_PEAK = 2.0
TARGETS = {
    "recorded_step_ratio_max": TARGET_STEP_RATIO,
    "burst_spans_dropped": 0,
    "load_mb_per_s_min": TARGET_LOAD_MBPS,
    "load_peak_file_multiple_max": TARGET_LOAD_PEAK,
}
"""The targets as the JSON output names them."""


# --- plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan(benchlib.BasePlan):
    """Sizes of one run of the benchmark, as ``full_quick(full, quick)``, after those of ``benchlib.BasePlan``."""

    step_n: int = full_quick(3_000, 1_000)
    export_n: int = full_quick(5_000, 2_000)
    export_batches: int = full_quick(10, 8)
    burst_steps: int = full_quick(100_000, 10_000)
    load_bytes: int = full_quick(50 * MB, 5 * MB)
    load_reps: int = full_quick(5, 3)
    breakdown_n: int = full_quick(5_000, 2_000)
    write_n: int = full_quick(5_000, 2_000)


FULL, QUICK = benchlib.plans(Plan)


# --- the span keeper, the results, the tools -------------------------------------------------


class KeepSpans(SpanProcessor):
    """Keeps ended spans while ``active`` (added only after the per-call measurements)."""

    def __init__(self) -> None:
        self.active = False
        self.spans: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self.active:
            self.spans.append(span)


_TEXT = (
    "refunds are issued to the original payment method within fourteen days of receiving returned item "
    "customer may request exchange instead store voucher order shipping costs not refundable unless "
    "product arrived damaged or different from description please include receipt number photo "
    "packaging international orders take longer bank processing times vary by country region card "
    "issuer holiday periods extend all timelines warehouse inspects every parcel before approval "
    "partial amounts apply when items show wear missing parts accessories manuals labels tags"
)
_WORDS = tuple(_TEXT.split())


def prose(n_chars: int, seed: int = 7) -> str:
    """Deterministic plain text of exactly ``n_chars`` characters, free of secret-looking words."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < n_chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 18)))
        sentence = sentence[0].upper() + sentence[1:] + ". "
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:n_chars]


def document_result(body_chars: int = 4_000) -> dict[str, Any]:
    return {"status": 200, "body": prose(body_chars)}


def records_result(target_bytes: int = 4_096, count: int = 20) -> list[dict[str, Any]]:
    """About ``count`` order records whose JSON totals about ``target_bytes``."""

    def build(note_chars: int) -> list[dict[str, Any]]:
        return [
            {
                "order_id": f"ord_{10_000 + i}",
                "customer": f"c_{17 + i % 5}",
                "amount": round(19.95 + 7.5 * i, 2),
                "currency": "EUR",
                "status": ("refunded", "shipped", "delivered", "pending")[i % 4],
                "created": f"2026-11-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
                "items": 1 + i % 3,
                "note": prose(note_chars, seed=100 + i),
            }
            for i in range(count)
        ]

    bare = len(orjson.dumps(build(0)))
    return build(max(0, (target_bytes - bare) // count))


DOCUMENT = document_result()
RECORDS = records_result()
# The same document with one ordinary word that holds a secret key word ("cred" in "credit"):
# the redaction pre-check then says "maybe" and the result is parsed and walked.
DOCUMENT_WALK = {"status": 200, "body": DOCUMENT["body"][:-14] + " store credit."}


@tool(name="search", side_effect="read_only")
def search_document(query: str, limit: int = 20) -> dict[str, Any]:
    """A read-only tool returning one ~4 KB document."""
    return DOCUMENT


@tool(name="search", side_effect="read_only")
def search_document_walk(query: str, limit: int = 20) -> dict[str, Any]:
    """``search_document`` whose result trips the redaction pre-check."""
    return DOCUMENT_WALK


@tool(name="search", side_effect="read_only")
def search_records(query: str, limit: int = 20) -> list[dict[str, Any]]:
    """A read-only tool returning ~20 records, ~4 KB in all."""
    return RECORDS


def sized_tool(result: object) -> Callable[..., object]:
    """A read-only ``search`` tool returning ``result`` (for the load tapes)."""

    @tool(name="search", side_effect="read_only")
    def search(query: str, limit: int = 20) -> object:
        return result

    return search


def varied_tool(body_chars: int, seed: int = 11) -> Callable[..., object]:
    """A read-only ``search`` tool whose every result differs: an id, a hash, a URL, a log line, text.

    The result's JSON is about ``body_chars`` characters (at least its ~330 of fixed fields), like
    the plain document of ``sized_tool``, but with the values a real tool returns (for the load tapes).
    """
    rng = random.Random(seed)

    @tool(name="search", side_effect="read_only")
    def search(query: str, limit: int = 20) -> object:
        ident = f"{rng.getrandbits(128):032x}"
        request = f"{ident[:8]}-{ident[8:12]}-{ident[12:16]}-{ident[16:20]}-{ident[20:]}"
        digest = f"{rng.getrandbits(256):064x}"
        item = rng.randint(1, 99_999)
        log = (
            f"2026-12-03T12:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z INFO req={request} "
            f"GET /api/v1/items/{item} took {rng.random() * 100:.1f}ms"
        )
        text = prose(max(0, body_chars - 330), seed=rng.randint(0, 999))
        return {
            "status": 200,
            "id": request,
            "sha256": digest,
            "url": f"https://shop.example.com/items/{item}?ref={digest[:12]}&page={rng.randint(1, 40)}",
            "log": log,
            "body": text,
        }

    return search


# --- tapes on disk ---------------------------------------------------------------------------


@dataclass
class TapeScan:
    lines: int = 0
    step_lines: int = 0
    run_lines: int = 0
    other_lines: int = 0
    bytes: int = 0
    ends_with_newline: bool = True


def scan_tape(path: Path) -> TapeScan:
    """Count the lines of a tape, and which are steps and runs (by span name), streaming."""
    scan = TapeScan()
    last = b"\n"
    with path.open("rb") as f:
        for line in f:
            scan.lines += 1
            scan.bytes += len(line)
            if b'"name":"execute_tool ' in line:
                scan.step_lines += 1
            elif b'"name":"invoke_agent ' in line:
                scan.run_lines += 1
            else:
                scan.other_lines += 1
            last = line
    scan.ends_with_newline = last.endswith(b"\n")
    return scan


def step_attributes(path: Path) -> tuple[str, dict[str, Any]]:
    """The span name and attributes of the first step line of a tape (decoded from OTLP JSON)."""
    with path.open("rb") as f:
        for raw in f:
            line = orjson.loads(raw)
            span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
            if not span["name"].startswith("execute_tool "):
                continue
            attrs: dict[str, Any] = {}
            for kv in span["attributes"]:
                value = kv["value"]
                if "stringValue" in value:
                    attrs[kv["key"]] = value["stringValue"]
                elif "intValue" in value:
                    attrs[kv["key"]] = int(value["intValue"])
                elif "boolValue" in value:
                    attrs[kv["key"]] = value["boolValue"]
                elif "doubleValue" in value:
                    attrs[kv["key"]] = float(value["doubleValue"])
            return span["name"], attrs
    raise RuntimeError(f"{path}: no step line")


# --- report ----------------------------------------------------------------------------------


def parse_floor(path: Path, reps: int) -> list[float]:
    """Seconds to read ``path`` line by line and ``orjson.loads`` each line, nothing else, ``reps`` times.

    The floor of any loader that parses every line with orjson: ``load_tape`` next to it, in the
    same run, says what our checks and the building of steps add.
    """
    times: list[float] = []
    loads = orjson.loads
    for _ in range(reps):
        gc.collect()
        gc.disable()
        start = time.perf_counter_ns()
        with path.open("rb", buffering=1 << 20) as f:
            for raw in f:
                loads(raw)
        times.append((time.perf_counter_ns() - start) / 1e9)
        gc.enable()
    return times


def render(report: benchlib.Report[Plan]) -> str:
    return benchlib.render_report(report, "recording", folder_note=f"; tmpfs {report.machine['tmpfs_dir'] or 'none'}")


# --- the measurements ------------------------------------------------------------------------


class Bench(benchlib.BenchBase[Plan]):
    """Holds the providers, the folders and the report while the sections run.

    record() adds its router to the application's provider; the reference provider, for the bare
    span, never has it.
    """

    def __init__(self, plan: Plan, work: Path, shm: Path | None) -> None:
        super().__init__(plan, benchlib.machine_info(work, more={"tmpfs_dir": str(shm) if shm else None}))
        self.work = work
        self.shm = shm
        self.keep = KeepSpans()
        self.step_us: dict[str, float] = {}
        self.span_names: dict[str, str] = {}
        self.span_attrs: dict[str, dict[str, Any]] = {}
        self.line_bytes: dict[str, int] = {}
        self.no_tape_us = 0.0

    # -- shared helpers --

    def _tape(self, where: Path, name: str) -> Path:
        path = where / f"{name}.jsonl"
        if path.exists():
            path.unlink()
        return path

    def setup(self) -> None:
        """Record one step of each shape: the attributes a real step carries, and line sizes."""
        for shape, fn in (("document", search_document), ("records", search_records)):
            path = self._tape(self.work, f"setup-{shape}")
            with record(path), agent_run("bench"):
                fn(query=QUERY, limit=LIMIT)
            name, attrs = step_attributes(path)
            self.span_names[shape] = name
            self.span_attrs[shape] = attrs
            scan = scan_tape(path)
            with path.open("rb") as f:
                self.line_bytes[shape] = len(f.readline())
            assert scan.step_lines == 1 and scan.run_lines == 1, scan
            path.unlink()
        redactor = DEFAULT_CAPTURE.redactor
        self.report.data["shapes"] = {
            "document": {
                "result_json_bytes": len(orjson.dumps(DOCUMENT)),
                "tape_line_bytes": self.line_bytes["document"],
                "redaction_walk": redactor.may_redact(orjson.dumps(DOCUMENT).decode()),
            },
            "records": {
                "result_json_bytes": len(orjson.dumps(RECORDS)),
                "records": len(RECORDS),
                "tape_line_bytes": self.line_bytes["records"],
                "redaction_walk": redactor.may_redact(orjson.dumps(RECORDS).decode()),
            },
            "document_walk": {
                "result_json_bytes": len(orjson.dumps(DOCUMENT_WALK)),
                "redaction_walk": redactor.may_redact(orjson.dumps(DOCUMENT_WALK).decode()),
            },
        }

    def attrs_span(self, shape: str) -> Sample:
        """A span with a step's attributes set directly: the SDK's own share of a step."""
        attrs = dict(self.span_attrs[shape])
        result = attrs.pop(RESULT_ATTRIBUTE)
        return self.sdk_span(self.span_names[shape], attrs, result)

    def recorded_step(self, fn: Callable[..., object], where: Path, name: str) -> tuple[Sample, TapeScan, int]:
        path = self._tape(where, name)

        def loop(n: int) -> None:
            for _ in range(n):
                fn(query=QUERY, limit=LIMIT)

        p = self.plan
        with record(path) as rec, agent_run("bench"):
            sample = time_loop(loop, p.step_n, p.reps, p.warmup_n)
        scan = scan_tape(path)
        path.unlink()
        return sample, scan, rec.stats.spans_dropped

    def unrecorded_step(self, fn: Callable[..., object]) -> Sample:
        """The same step in a run outside record(): capture and span, nothing written."""

        def loop(n: int) -> None:
            for _ in range(n):
                fn(query=QUERY, limit=LIMIT)

        p = self.plan
        with agent_run("bench"):
            return time_loop(loop, p.step_n, p.reps, p.warmup_n)

    # -- section 1 --

    def per_call(self) -> None:
        sec = "1. Per call (µs per span or step; ratio to the mean bare span)"
        before = self.bare()
        attrs = {shape: self.attrs_span(shape) for shape in ("document", "records")}
        steps: dict[str, tuple[Sample, TapeScan, int]] = {}
        places = [("disk", self.work)] + ([("tmpfs", self.shm)] if self.shm else [])
        for place, where in places:
            for shape, fn in (("document", search_document), ("records", search_records)):
                steps[f"{shape}/{place}"] = self.recorded_step(fn, where, f"steps-{shape}")
        steps["document_walk/disk"] = self.recorded_step(search_document_walk, self.work, "steps-walk")
        no_tape = self.unrecorded_step(search_document)
        after = self.bare()
        bare = self.bare_reference(sec, before, after)
        rep = self.report
        for shape, sample in attrs.items():
            rep.add(self.timed_row(sec, f"SDK span with a {shape} step's attributes, no capture", sample))
        kb = {s: self.report.data["shapes"][s]["result_json_bytes"] / 1024 for s in ("document", "records")}
        labels = {
            "document": f"document ({kb['document']:.1f} KB result)",
            "records": f"{len(RECORDS)} records ({kb['records']:.1f} KB result)",
            "document_walk": "same document + 'credit' (redactor walk)",
        }
        data_steps: dict[str, Any] = {}
        for key, (sample, scan, dropped) in steps.items():
            shape, place = key.split("/")
            ratio = self.x_bare(sample.median_ns)
            name = f"recorded step, {labels[shape]}, {place}"
            if place == "disk" and shape != "document_walk":
                rep.add(self.timed_row(sec, name, sample, f"≤ {TARGET_STEP_RATIO}x", ratio <= TARGET_STEP_RATIO))
            else:
                rep.add(self.timed_row(sec, name, sample))
            self.step_us[key] = sample.us
            data_steps[key] = {
                **sample.to_json(),
                "ratio_to_bare": round(ratio, 3),
                "tape_lines": scan.lines,
                "tape_bytes": scan.bytes,
                "bytes_per_step_line": round(scan.bytes / max(1, scan.step_lines)),
                "spans_dropped": dropped,
            }
        self.no_tape_us = no_tape.us
        rep.add(self.timed_row(sec, "same document step in agent_run without record() (no tape)", no_tape))
        self.report.data["per_call"] = {
            "step_without_record_document": {
                **no_tape.to_json(),
                "ratio_to_bare": round(self.x_bare(no_tape.median_ns), 3),
            },
            **bare,
            "sdk_span_with_step_attributes": {
                s: {**a.to_json(), "ratio_to_bare": round(self.x_bare(a.median_ns), 3)} for s, a in attrs.items()
            },
            "recorded_step": data_steps,
        }

    # -- section 2: burst --

    def burst(self) -> None:
        sec = f"2. Burst: {self.plan.burst_steps:,} recorded steps in one record(), as fast as possible"
        n = self.plan.burst_steps
        path = self._tape(self.work, "burst")
        self.app_provider.force_flush()
        received_before = self.app_exporter.received
        fn = search_document
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter_ns()
            with record(path) as rec:
                with agent_run("bench-burst"):
                    for _ in range(n):
                        fn(query=QUERY, limit=LIMIT)
                loop_end = time.perf_counter_ns()
            end = time.perf_counter_ns()
        stats = rec.stats
        self.app_provider.force_flush()
        otlp_received = self.app_exporter.received - received_before
        scan = scan_tape(path)
        path.unlink()
        lines_ok = scan.step_lines == n and scan.run_lines == 1 and scan.other_lines == 0 and scan.ends_with_newline
        rep = self.report
        lines = f"{scan.step_lines:,}+{scan.run_lines}"
        rep.add(checked_row(sec, "lines on the tape (steps + runs)", lines, "lines", f"{n // 1000}k+1", lines_ok))
        dropped = stats.spans_dropped
        rep.add(checked_row(sec, "rec.stats.spans_dropped", dropped, "spans", "0", dropped == 0))
        step_ns = (loop_end - start) / n
        rep.add(Row(sec, "steps per second (1 thread, incl. tape write)", n / ((loop_end - start) / 1e9), "steps/s"))
        rep.add(Row(sec, "time per step in the burst", step_ns / NS_PER_US, "µs", self.x_bare(step_ns)))
        rep.add(Row(sec, "record() exit (flush + fsync of the tape)", (end - loop_end) / 1e6, "ms"))
        rep.add(Row(sec, "tape size", scan.bytes / MB, "MB"))
        rep.add(
            Row(
                sec,
                "for contrast: spans the OTLP BatchSpanProcessor dropped",
                (n + 1) - otlp_received,
                "spans",
            )
        )
        self.report.data["burst"] = {
            "steps": n,
            "tape": asdict(scan),
            "lines_ok": lines_ok,
            "stats": asdict(stats),
            "warnings": [str(w.message) for w in caught],
            "seconds_loop": (loop_end - start) / 1e9,
            "seconds_exit": (end - loop_end) / 1e9,
            "us_per_step": step_ns / NS_PER_US,
            "otlp_batch_processor_received": otlp_received,
            "otlp_batch_processor_dropped": (n + 1) - otlp_received,
        }

    # -- section 3: exporter --

    def capture_spans(self) -> dict[str, ReadableSpan]:
        """ReadableSpans of real recorded steps (one per shape), kept by a processor added now."""
        self.app_provider.add_span_processor(self.keep)
        spans: dict[str, ReadableSpan] = {}
        for shape, fn in (("document", search_document), ("records", search_records)):
            path = self._tape(self.work, f"capture-{shape}")
            self.keep.spans.clear()
            self.keep.active = True
            with record(path), agent_run("bench"):
                fn(query=QUERY, limit=LIMIT)
            self.keep.active = False
            path.unlink()
            spans[shape] = next(s for s in self.keep.spans if s.name.startswith("execute_tool "))
        self.keep.spans.clear()
        return spans

    def exporter(self, spans: dict[str, ReadableSpan]) -> None:
        sec = "3. TapeSpanExporter(path).export(...) on pre-built spans of real steps, tape on disk"
        p = self.plan
        rep = self.report
        data: dict[str, Any] = {}
        for shape, span in spans.items():
            for batch in (1, 512):
                spans_batch = (span,) * batch
                per_rep_ns: list[float] = []
                bytes_per_span = 0.0
                count = p.export_n if batch == 1 else p.export_batches
                for i in range(p.reps + 1):  # the first round is a warm-up
                    path = self._tape(self.work, f"export-{shape}-{batch}")
                    exp = TapeSpanExporter(path)
                    exp.export((span,))  # opens the file
                    start = time.perf_counter_ns()
                    for _ in range(count):
                        exp.export(spans_batch)
                    elapsed = time.perf_counter_ns() - start
                    exp.shutdown()
                    size = path.stat().st_size
                    bytes_per_span = size / (count * batch + 1)
                    path.unlink()
                    if i:
                        per_rep_ns.append(elapsed / (count * batch))
                sample = Sample(per_rep_ns)
                rate = 1e9 / sample.median_ns
                lo = 1e9 / max(per_rep_ns)
                hi = 1e9 / min(per_rep_ns)
                what = "export((span,)) one span per call" if batch == 1 else "export(512 spans) per call"
                rep.add(
                    Row(
                        sec,
                        f"{shape}: {what}",
                        rate,
                        "spans/s",
                        spread=f"{lo:,.0f}..{hi:,.0f}",
                    )
                )
                data[f"{shape}/batch{batch}"] = {
                    "spans_per_s": round(rate),
                    "us_per_span": round(sample.us, 3),
                    "reps_us_per_span": [round(v / NS_PER_US, 3) for v in per_rep_ns],
                    "bytes_per_span": round(bytes_per_span),
                    "mb_per_s": round(rate * bytes_per_span / MB, 1),
                }
            rep.add(Row(sec, f"{shape}: bytes per span on the tape", round(bytes_per_span), "bytes"))
        self.report.data["exporter"] = data

    # -- section 4: load --

    def build_load_tape(self, path: Path, fn: Callable[..., object], target: int, steps_per_run: int = 20) -> None:
        with record(path):
            while not path.exists() or path.stat().st_size < target:
                with agent_run("bench-load"):
                    for _ in range(steps_per_run):
                        fn(query=QUERY, limit=LIMIT)

    def load(self) -> None:
        sec = "4. load_tape(path) (warm page cache)"
        p = self.plan
        rep = self.report
        # A document result with a body of B plain characters gives a line of about overhead + B bytes.
        doc_overhead = self.line_bytes["document"] - len(DOCUMENT["body"])
        # "varied": lines of the small size whose results are each different (ids, hashes, URLs, logs).
        sizes = {"small": 1_536, "varied": 1_536, "large": 6_144}
        data: dict[str, Any] = {}
        for label, line_target in sizes.items():
            body = max(64, line_target - doc_overhead)
            fn = (
                varied_tool(body - 300)
                if label == "varied"
                else sized_tool({"status": 200, "body": prose(body, seed=3)})
            )
            path = self._tape(self.work, f"load-{label}")
            self.build_load_tape(path, fn, p.load_bytes)
            scan = scan_tape(path)
            size = scan.bytes
            mean_line = size / scan.lines
            name = f"{label} spans ({mean_line / 1000:.1f} KB/line, {size / MB:.0f} MB, {scan.lines:,} spans)"
            try:
                times: list[float] = []
                tape = load_tape(path)  # warm-up
                loaded = len(tape.runs) + sum(len(r.steps) for r in tape.runs)
                del tape
                for _ in range(p.load_reps):
                    gc.collect()
                    start = time.perf_counter_ns()
                    tape = load_tape(path)
                    times.append((time.perf_counter_ns() - start) / 1e9)
                    del tape
                parse_times = parse_floor(path, p.load_reps)
                gc.collect()
                memory = self.load_memory(path)
            except Exception as exc:  # load_tape is being finished elsewhere: report, do not crash
                rep.add(Row(sec, f"{name}: load_tape failed", f"{type(exc).__name__}: {exc}"[:60], "", verdict="ERROR"))
                data[label] = {"error": f"{type(exc).__name__}: {exc}", "file_bytes": size}
                path.unlink()
                continue
            path.unlink()
            t = statistics.median(times)
            mbps = size / MB / t
            spread = f"{size / MB / max(times):.0f}..{size / MB / min(times):.0f}"
            target = f"≥ {TARGET_LOAD_MBPS:.0f}"
            rep.add(checked_row(sec, f"{name}: MB/s", mbps, "MB/s", target, mbps >= TARGET_LOAD_MBPS, spread))
            rep.add(Row(sec, "    spans per second", loaded / t, "spans/s"))
            floor = statistics.median(parse_times)
            rep.add(Row(sec, "    orjson.loads of every line alone (no checks, no steps)", size / MB / floor, "MB/s"))
            rep.add(Row(sec, "    load_tape / that parse alone", t / floor, "x"))
            peak = memory.get("tracemalloc_peak_bytes")
            if isinstance(peak, int):
                ratio = peak / size
                target = f"≤ {TARGET_LOAD_PEAK:.0f}x"
                ok = ratio <= TARGET_LOAD_PEAK
                rep.add(checked_row(sec, "    peak memory (tracemalloc) / file size", ratio, "x file", target, ok))
            rss = memory.get("rss_peak_delta_bytes")
            if isinstance(rss, int):
                rep.add(Row(sec, "    peak RSS growth during the load / file size", rss / size, "x file"))
            data[label] = {
                "file_bytes": size,
                "spans_in_file": scan.lines,
                "spans_loaded": loaded,
                "mean_line_bytes": round(mean_line),
                "seconds": [round(x, 4) for x in times],
                "median_seconds": round(t, 4),
                "mb_per_s": round(mbps, 1),
                "spans_per_s": round(loaded / t),
                "parse_alone_seconds": [round(x, 4) for x in parse_times],
                "parse_alone_mb_per_s": round(size / MB / floor, 1),
                **memory,
            }
        self.report.data["load"] = data

    def load_memory(self, path: Path) -> dict[str, Any]:
        """Peak memory of load_tape, measured in a fresh process (so earlier phases do not hide it)."""
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--load-memory", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"memory child failed: {proc.stderr.strip().splitlines()[-1:]}")
        result: dict[str, Any] = json.loads(proc.stdout)
        return result

    # -- section 5: breakdown --

    def breakdown(self, spans: dict[str, ReadableSpan]) -> None:
        sec = "5. Where a step's time goes (document shape; orientation, parts timed alone)"
        p = self.plan
        rep = self.report
        spec = tool_spec(search_document)
        assert spec is not None
        capture = DEFAULT_CAPTURE
        kwargs = {"query": QUERY, "limit": LIMIT}
        binder = spec.binder  # what a recorded call binds with
        bound = binder((), kwargs)
        span = spans["document"]
        encoder = LineEncoder()
        line = encoder.encode(span)

        def t_bind(n: int) -> None:
            for _ in range(n):
                binder((), kwargs)

        def t_args(n: int) -> None:
            for _ in range(n):
                capture_args("search", bound, capture)

        def t_result(n: int) -> None:
            for _ in range(n):
                capture_result(DOCUMENT, capture)

        def t_encode(n: int) -> None:
            for _ in range(n):
                encoder.encode(span)

        parts: list[tuple[str, Sample]] = [
            ("bind the call to the signature", time_loop(t_bind, p.breakdown_n, p.reps, 200)),
            ("capture_args: JSON, normalise, redaction check, call key", time_loop(t_args, p.breakdown_n, p.reps, 200)),
            ("capture_result: JSON dump + redaction check (4 KB)", time_loop(t_result, p.breakdown_n, p.reps, 200)),
            ("LineEncoder.encode: the span as one OTLP JSON line", time_loop(t_encode, p.breakdown_n, p.reps, 200)),
        ]
        places = [("disk", self.work)] + ([("tmpfs", self.shm)] if self.shm else [])
        writes: dict[str, Sample] = {}
        for place, where in places:
            path = self._tape(where, "write")
            writer = AppendWriter(path)

            def t_writer(n: int, writer: AppendWriter = writer) -> None:
                for _ in range(n):
                    writer.write(line)

            writes[f"AppendWriter.write (flock, tail check, write), {place}"] = time_loop(
                t_writer, p.write_n, p.reps, 200
            )
            writer.close()
            path.unlink()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

            def t_write(n: int, fd: int = fd) -> None:
                for _ in range(n):
                    os.write(fd, line)

            writes[f"os.write of the line alone, {place}"] = time_loop(t_write, p.write_n, p.reps, 200)
            os.close(fd)
            path.unlink()
        parts += list(writes.items())

        def t_records(n: int) -> None:
            for _ in range(n):
                capture_result(RECORDS, capture)

        parts.append(
            (
                "capture_result, 20 records (4 KB; not in the sums below)",
                time_loop(t_records, p.breakdown_n, p.reps, 200),
            )
        )
        for name, sample in parts:
            rep.add(self.timed_row(sec, name, sample))
        sdk = self.report.data["per_call"]["sdk_span_with_step_attributes"]["document"]["median_us"]
        disk_writer = writes["AppendWriter.write (flock, tail check, write), disk"].us
        step = self.step_us["document/disk"]
        no_tape = self.no_tape_us
        capture_parts = sum(sample.us for _name, sample in parts[:3])
        encode = parts[3][1].us
        derived = [
            ("SDK span with the step's attributes (section 1)", sdk),
            ("= step without record() (section 1)", no_tape),
            ("  of which capture (bind + args + result, above)", capture_parts),
            ("  of which the SDK span (above)", sdk),
            ("  rest: run/step context, ids, proxy tracer, BSP, GC", no_tape - capture_parts - sdk),
            ("+ tape path: recorded step minus step without record()", step - no_tape),
            ("  of which encode + AppendWriter.write, disk (above)", encode + disk_writer),
            ("  rest: router, exporter, span kept alive, GC", step - no_tape - encode - disk_writer),
            ("= recorded step, document, disk (section 1)", step),
        ]
        for name, us in derived:
            rep.add(self.us_row(sec, name, us))
        self.report.data["breakdown_us"] = {
            **{name: round(s.us, 3) for name, s in parts},
            "sdk_span_with_step_attributes": sdk,
            "recorded_step_document_disk": step,
            "step_without_record_document": no_tape,
            "derived": {name.strip("=+ "): round(us, 3) for name, us in derived},
            "line_bytes": len(line),
        }


def profile_step(shm: Path | None, work: Path, steps: int = 5_000) -> str:
    """cProfile of recorded document steps: the top functions by own and by cumulative time."""
    where = shm or work
    path = where / "profile.jsonl"
    profiler = cProfile.Profile()
    with record(path), agent_run("bench"):
        for _ in range(200):
            search_document(query=QUERY, limit=LIMIT)
        profiler.enable()
        for _ in range(steps):
            search_document(query=QUERY, limit=LIMIT)
        profiler.disable()
    path.unlink()
    return benchlib.profile_text(profiler, "cProfile of recorded document steps (tape on tmpfs when there is one)")


def _proc_status_kib(field_name: str) -> int | None:
    try:
        for entry in Path("/proc/self/status").read_text().splitlines():
            if entry.startswith(field_name + ":"):
                return int(entry.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak_rss() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS; False where Linux does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def load_memory_child(path: str) -> None:
    """``--load-memory PATH``: peak RSS growth and tracemalloc peak of one load, as JSON.

    ``ru_maxrss`` is no use here: a child started by ``subprocess`` reports its parent's peak
    after exec. The peak is read from ``/proc/self/status`` (VmHWM) after resetting it.
    """
    gc.collect()
    out: dict[str, Any] = {}
    if _reset_peak_rss():
        before = _proc_status_kib("VmRSS")
        tape = load_tape(path)
        peak = _proc_status_kib("VmHWM")
        del tape
        if before is not None and peak is not None:
            out["rss_before_bytes"] = before * 1024
            out["rss_peak_delta_bytes"] = (peak - before) * 1024
    gc.collect()
    tracemalloc.start()
    tape = load_tape(path)
    _current, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del tape
    out["tracemalloc_peak_bytes"] = traced_peak
    print(json.dumps(out))


def main(argv: Sequence[str] | None = None) -> int:
    parser = benchlib.arg_parser(
        __doc__, "smaller sizes (10k burst, 5 MB tapes)", "also print a cProfile of recorded steps"
    )
    parser.add_argument("--load-memory", metavar="PATH", help=argparse.SUPPRESS)
    parser.add_argument(
        "--only", choices=("load",), help="only section 4 (load_tape), after the set-up it needs: about 1 minute"
    )
    args = parser.parse_args(argv)
    if args.load_memory:
        load_memory_child(args.load_memory)
        return 0
    # The OTLP-path BatchSpanProcessor says so when its queue is full in the burst; the burst
    # section counts those drops itself.
    logging.getLogger("opentelemetry.sdk._shared_internal").setLevel(logging.ERROR)
    plan = QUICK if args.quick else FULL
    shm_base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    started = time.perf_counter()
    with ExitStack() as stack:
        work = stack.enter_context(benchlib.folder(None, "bench-record-"))
        shm = stack.enter_context(benchlib.folder(shm_base, "bench-record-")) if shm_base else None
        bench = Bench(plan, work, shm)
        print(f"benchmark ({plan.mode}) in {work}" + (f" and {shm}" if shm else ""), file=sys.stderr)
        bench.setup()
        if args.only == "load":
            bench.load()
            profile = ""
        else:
            bench.per_call()
            bench.burst()
            spans = bench.capture_spans()
            bench.exporter(spans)
            bench.load()
            bench.breakdown(spans)
            profile = profile_step(shm, work) if args.profile else ""
    benchlib.conclude(bench.report, render, time.perf_counter() - started, args.json, TARGETS, profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
