"""Reading a tape's OTLP JSON lines in tests: its spans, a span's attributes, a command's last JSON line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def spans(tape: Path) -> list[dict[str, Any]]:
    """Every span of the tape, in file order."""
    out: list[dict[str, Any]] = []
    for line in tape.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend(ss["spans"])
    return out


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes as a plain mapping of key to value."""
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def last_json(stdout: str) -> dict[str, Any]:
    """The last line a command printed, read as JSON."""
    return json.loads(stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
