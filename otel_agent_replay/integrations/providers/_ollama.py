"""Ollama's native API (``/api/chat``, ``/api/generate``, ``/api/embed`` and the older ``/api/embeddings``).

Ollama streams unless told not to: a request whose body lacks ``"stream": false`` is answered with
newline-delimited JSON (``application/x-ndjson``, the ``ndjson`` framing), one object a line, the
last with ``"done": true``, the finish reason (``done_reason``) and the token counts
(``prompt_eval_count`` in, ``eval_count`` out). Embeddings never stream. Ollama gives no response
id. Its OpenAI-compatible ``/v1/...`` paths are the OpenAI routes' (provider ``openai`` on a local
host, the protocol it speaks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_agent_replay.core import attributes as A

from .._genai import Facts
from .._routes import HttpRoute
from ._base import Provider, never

NAME = "ollama"


def streams(args: Mapping[str, Any]) -> bool:
    """Ollama's rule: a chat or generate request streams unless its body says ``"stream": false``."""
    return args.get("stream") is not False


def read(facts: Facts, obj: Mapping[str, Any]) -> None:
    """What an Ollama response (or one line of its stream) says."""
    facts.set_model(obj.get("model"))
    facts.reason(obj.get("done_reason"))
    facts.usage(obj.get("prompt_eval_count"), obj.get("eval_count"))


OLLAMA = Provider(
    NAME,
    (
        HttpRoute("ollama.chat", "/api/chat", NAME, reader=read, streams=streams),
        HttpRoute("ollama.generate", "/api/generate", NAME, reader=read, streams=streams),
        HttpRoute("ollama.embed", "/api/embed", NAME, A.OP_EMBEDDINGS, reader=read, streams=never),
        HttpRoute("ollama.embeddings", "/api/embeddings", NAME, A.OP_EMBEDDINGS, reader=read, streams=never),
    ),
)
