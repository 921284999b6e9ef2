"""Tape text made safe to show a person: control characters become visible escapes.

A tape comes from anywhere, and its strings (tool and agent names, arguments, results, exception
messages, agent versions) are printed by the CLI and written into reports. A string that holds
terminal control characters could clear the screen, retitle the window or move the cursor to
overwrite a line, and a bidirectional override can show text in another order than it is. Every
human-readable output passes tape text through ``visible``: each C0 control character (U+0000 to
U+001F) except the line feed and the tab, DEL, each C1 control character (U+0080 to U+009F: a lone
CSI, U+009B, starts an escape sequence on many terminals) and each bidirectional embedding,
override or isolate (U+202A to U+202E, U+2066 to U+2069) and each bidirectional mark (U+200E, U+200F,
U+061C) becomes its escape as Python writes it (``\\x1b``, ``\\x9b``, ``\\u202e``), so an escape
sequence is shown as the text it is and never acts, and a label cannot reorder the text around it.
The HTML pages (``pages``) pass their text and their embedded data through ``visible`` too: one
list of characters for the terminal and the page. Machine formats (``--json``) stay exact.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["CONTROL_CHARACTERS", "visible"]

CONTROL_CHARACTERS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""The characters ``visible`` replaces (line feed and tab are kept)."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control character shown as its escape; ``newlines=False`` escapes line
    feeds and tabs too (for one-line fields such as a table cell)."""
    if not newlines:
        text = text.replace("\n", "\\n").replace("\t", "\\t")
    return CONTROL_CHARACTERS.sub(_escape, text) if CONTROL_CHARACTERS.search(text) else text
