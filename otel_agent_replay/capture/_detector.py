"""The maintained detector: known credential formats from a rule set that its own maintainers keep current.

The rules come from ``kingfisher-secret-scanner`` (MongoDB's Kingfisher: several hundred rules, the
Betterleaks/Gitleaks set among them, matched in native code by Vectorscan). Its scanner is built on the
first text that needs it, not at import: building compiles the rules (seconds the first time on a
machine, then read from Kingfisher's own cache), and most values never reach it because the cheap
gate in ``_layers`` rules them out first.

``known_tokens(text)`` gives the secrets found in the text as it is, as the strings to remove. If the package cannot be
loaded the detector is off, once, with a ``RecordingWarning``; the other two layers (credential
context and high-entropy tokens) still run, so redaction degrades but never stops.
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any, Final

from otel_agent_replay.core import RecordingWarning

__all__ = ["DETECTOR", "Detector"]

_log = logging.getLogger("otel_agent_replay.redact")

# A secret shorter than this is not a credential format's (and a one-character match would eat text).
_MIN_SECRET: Final = 8


class Detector:
    """A lazily built Kingfisher scanner shared by every ``Redactor`` (it holds no configuration of theirs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()
        self._scanner: Any = None
        self._failed = False

    def _build(self) -> Any:
        with self._lock:
            if self._scanner is None and not self._failed:
                try:
                    from kingfisher_sdk import Scanner

                    # Its own base64 decoding is off: a secret it finds in decoded base64 is reported decoded,
                    # which is never a substring of the text scanned, so ``known_tokens`` drops it anyway;
                    # capture decodes base64 of text itself (``_decoded``) and scans that. Off, a scan costs
                    # a quarter to a half less (bench/bench_redact_throughput.py).
                    self._scanner = Scanner(base64=False)
                except Exception as exc:  # a missing wheel or a broken rule cache must not stop a recording
                    self._failed = True
                    _log.warning("the secret detector could not start (%s)", type(exc).__name__)
                    warnings.warn(
                        f"the maintained secret detector (kingfisher-secret-scanner) could not start: "
                        f"{type(exc).__name__}; known token formats are now found only by credential context "
                        "and entropy. Reinstall otel-agent-replay's dependencies to turn it back on",
                        RecordingWarning,
                        stacklevel=3,
                    )
            return self._scanner

    def known_tokens(self, text: str, data: bytes | None = None) -> list[str]:
        """The secrets the rule set finds in ``text`` (each once, longest first); empty when none or off.
        ``data``: the text's UTF-8 bytes, when the caller has them (the scanner reads bytes)."""
        scanner = self._scanner if self._scanner is not None else self._build()
        if scanner is None:
            return []
        try:
            with self._scan_lock:  # one scan at a time: the native scanner's thread safety is not documented
                findings = scanner.scan(text if data is None else data)
        except Exception as exc:  # fail closed at the caller: it redacts what the other layers find
            _log.warning("the secret detector failed on a value (%s)", type(exc).__name__)
            return []
        found: set[str] = set()
        for finding in findings:
            secret = finding.secret
            if isinstance(secret, bytes):
                secret = secret.decode("utf-8", "replace")
            if isinstance(secret, str) and len(secret) >= _MIN_SECRET and secret in text:
                found.add(secret)
        return sorted(found, key=len, reverse=True)


DETECTOR: Final = Detector()
"""The one detector of the process."""
