"""Read a tape's raw lines without the loader, to check exactly what was written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson


@dataclass(frozen=True)
class RawSpan:
    name: str
    attrs: dict[str, Any]
    span: dict[str, Any]

    @property
    def span_id(self) -> str:
        return str(self.span["spanId"])

    @property
    def parent_span_id(self) -> str:
        return str(self.span.get("parentSpanId", ""))


def _value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "boolValue" in v:
        return v["boolValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    return None


def raw_spans(path: Path) -> list[RawSpan]:
    """Every span on a tape, in file order, with attributes decoded."""
    out = []
    for line in path.read_bytes().splitlines():
        doc = orjson.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: _value(a["value"]) for a in span.get("attributes", [])}
                    out.append(RawSpan(span["name"], attrs, span))
    return out


def steps_of(path: Path) -> list[RawSpan]:
    """The step spans on a tape (those with a seq)."""
    from otel_agent_replay.core import attributes as A

    return [s for s in raw_spans(path) if A.SEQ in s.attrs]


def run_span_of(path: Path) -> RawSpan:
    """The one run span on a tape."""
    from otel_agent_replay.core import attributes as A

    (run,) = [s for s in raw_spans(path) if s.attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT]
    return run
