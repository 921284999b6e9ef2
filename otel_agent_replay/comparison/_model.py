"""A model step as ``compare`` looks at it: what the model was asked and what it said, without the
values that change with every call.

Two recordings of the same behaviour differ in the response's id, the request-id headers, the
tool-call and tool-use ids the provider minted (and the requests that echo them back), ``created``,
``system_fingerprint``, timings, rate-limit counters, and for a stream every event's offset and
raw text. None of that is behaviour. The view leaves those fields out and puts a recorded stream
back together into the answer it carries, so the same behaviour compares equal and a changed
prompt, text or tool argument is still named by its path.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from otel_agent_replay.capture import (
    VOLATILE_MODEL_FIELDS,
    VOLATILE_MODEL_RESULT_FIELDS,
    VOLATILE_RESPONSE_HEADERS,
    without,
)
from otel_agent_replay.conversation import assemble, is_stream
from otel_agent_replay.tape import Step


def _is_http_answer(result: object) -> bool:
    return isinstance(result, Mapping) and isinstance(result.get("status"), int) and "headers" in result


def _headers(headers: object) -> Any:
    if not isinstance(headers, Mapping):
        return headers
    return {
        k: v
        for k, v in headers.items()
        if not any(fnmatch.fnmatchcase(str(k).lower(), p) for p in VOLATILE_RESPONSE_HEADERS)
    }


def answer_view(route: str, result: Any) -> Any:
    """A model step's result without its volatile fields; a recorded stream as the answer it assembles into."""
    if not _is_http_answer(result):
        return without(result, VOLATILE_MODEL_RESULT_FIELDS)
    view: dict[str, Any] = {"status": result["status"], "headers": _headers(result.get("headers"))}
    if is_stream(result):
        view["stream"] = without(assemble(route, result), VOLATILE_MODEL_RESULT_FIELDS)
    elif "body" in result:
        view["body"] = without(result["body"], VOLATILE_MODEL_RESULT_FIELDS)
    else:
        view.update({k: v for k, v in result.items() if k not in ("status", "headers")})
    return view


def model_view(step: Step) -> tuple[Any, Any]:
    """A model step's arguments and result as ``compare`` sees them (volatile fields left out)."""
    return without(step.args, VOLATILE_MODEL_FIELDS), answer_view(step.tool, step.result)
