"""Conversation: what a model step was sent and what it answered, as the GenAI conventions' messages.

Every provider's request and answer (and a recorded stream, assembled) read as role + parts
messages, keyed by the step's route name; used for the ``gen_ai.input.messages`` /
``gen_ai.output.messages`` attributes, by ``show``, by ``compare`` and by the pages.
"""

from __future__ import annotations

from ._parts import Message, Part, chat_messages, dumps
from ._redact_stream import redact_stream
from ._shapes import Prompt, answer_body, answer_of, prompt_of
from ._streams import assemble, is_stream, payloads
from ._text import cut, part_text, said_messages, said_text, sent_messages

__all__ = [
    "Message",
    "Part",
    "Prompt",
    "answer_body",
    "answer_of",
    "assemble",
    "chat_messages",
    "cut",
    "dumps",
    "is_stream",
    "part_text",
    "payloads",
    "prompt_of",
    "redact_stream",
    "said_messages",
    "said_text",
    "sent_messages",
]
