"""What the commands write to standard output for machines: indented JSON, one document."""

from __future__ import annotations

import sys
from typing import Any

import orjson


def dump_json(data: Any) -> None:
    """Write ``data`` as indented JSON and a newline to standard output."""
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()
