"""Each provider's request, answer and stream read as the conventions' messages, from bodies in the
providers' documented wire shapes (the routes of providers whose fakes live elsewhere: Gemini, Bedrock,
Ollama, Cohere, the Responses API), and older spellings of the conventions' own shape."""

from __future__ import annotations

import base64
import json
from typing import Any

from otel_agent_replay.conversation import answer_of, assemble, prompt_of

CALL = {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}}


def _sse(*payloads: Any) -> dict[str, Any]:
    return {
        "status": 200,
        "headers": {},
        "events": [{"offset": 0.0, "text": f"data: {json.dumps(p)}\n\n"} for p in payloads],
    }


def test_gemini_contents_system_instruction_and_function_calls() -> None:
    args = {
        "model": "gemini-2.5-flash",
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"t": 21}}}]},
        ],
    }
    prompt = prompt_of("gemini.generate_content", args)
    assert prompt is not None and prompt.system == ({"type": "text", "content": "Be brief."},)
    assert [m["role"] for m in prompt.messages] == ["user", "assistant", "tool"]
    assert prompt.messages[1]["parts"] == [CALL]
    assert prompt.messages[2]["parts"] == [{"type": "tool_call_response", "response": {"t": 21}}]
    chunks = [
        {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": "It is "}]}}]},
        {
            "candidates": [
                {"index": 0, "content": {"role": "model", "parts": [{"text": "sunny."}]}, "finishReason": "STOP"}
            ]
        },
    ]
    said = answer_of("gemini.stream_generate_content", _sse(*chunks))
    assert said == [{"role": "assistant", "parts": [{"type": "text", "content": "It is sunny."}]}]
    as_array = {"status": 200, "headers": {"content-type": "application/json"}, "body": chunks}  # no alt=sse
    assert answer_of("gemini.stream_generate_content", as_array) == said


def test_bedrock_converse_and_its_event_stream() -> None:
    args = {
        "modelId": "anthropic.claude",
        "system": [{"text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris"}}}],
            },
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"json": {"t": 21}}]}}]},
        ],
    }
    prompt = prompt_of("bedrock.converse", args)
    assert prompt is not None and [m["role"] for m in prompt.messages] == ["user", "assistant", "tool"]
    assert prompt.messages[1]["parts"] == [{**CALL, "id": "t1"}]
    assert prompt.messages[2]["parts"] == [{"type": "tool_call_response", "id": "t1", "response": {"t": 21}}]
    events = [
        {"payload": {"role": "assistant", "p": "abc"}},
        {"payload": {"contentBlockIndex": 0, "delta": {"text": "Let me check."}, "p": "x"}},
        {"payload": {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t2", "name": "get_weather"}}}},
        {"payload": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"city":'}}}},
        {"payload": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '"Paris"}'}}}},
        {"payload": {"stopReason": "tool_use"}},
    ]
    stream = {"status": 200, "headers": {}, "framing": "aws-eventstream", "events": events}
    said = answer_of("bedrock.converse_stream", stream)
    assert said == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Let me check."}, {**CALL, "id": "t2"}]}
    ]
    # invoke-with-response-stream: Anthropic's events, base64 inside each payload's "bytes"
    inner = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    ]
    wrapped = [{"payload": {"bytes": base64.b64encode(json.dumps(e).encode()).decode()}} for e in inner]
    invoked = answer_of("bedrock.invoke_model_stream", {**stream, "events": wrapped})
    assert invoked == [{"role": "assistant", "parts": [{"type": "text", "content": "Hi"}]}]


def test_ollama_chat_and_generate_streams() -> None:
    lines = [
        {"model": "llama3", "message": {"role": "assistant", "content": "It is "}, "done": False},
        {"model": "llama3", "message": {"role": "assistant", "content": "sunny."}, "done": True, "total_duration": 5},
    ]
    stream = {
        "status": 200,
        "headers": {},
        "framing": "ndjson",
        "events": [{"text": json.dumps(x) + "\n"} for x in lines],
    }
    assert answer_of("ollama.chat", stream) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "It is sunny."}]}
    ]
    generated = [{"response": "Hel"}, {"response": "lo", "done": True}]
    stream = {**stream, "events": [{"text": json.dumps(x) + "\n"} for x in generated]}
    assert answer_of("ollama.generate", stream) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Hello"}]}
    ]
    prompt = prompt_of("ollama.generate", {"model": "llama3", "prompt": "Say hello", "system": "Be brief."})
    assert prompt is not None and prompt.messages[0]["parts"] == [{"type": "text", "content": "Say hello"}]


def test_cohere_v2_chat_answer_and_stream() -> None:
    body = {
        "id": "c1",
        "finish_reason": "TOOL_CALL",
        "message": {
            "role": "assistant",
            "tool_plan": "I will look it up.",
            "tool_calls": [
                {"id": "w1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
            ],
        },
    }
    said = answer_of("cohere.chat", {"status": 200, "headers": {}, "body": body})
    assert said == [{"role": "assistant", "parts": [{**CALL, "id": "w1"}]}]
    events = [
        {"type": "content-delta", "delta": {"message": {"content": {"text": "Sun"}}}},
        {"type": "content-delta", "delta": {"message": {"content": {"text": "ny"}}}},
        {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}},
    ]
    assert answer_of("cohere.chat_stream", _sse(*events)) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny"}]}
    ]


def test_openai_responses_input_items_and_stream() -> None:
    args = {
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
            {"type": "function_call_output", "call_id": "c1", "output": '{"t":21}'},
        ],
    }
    prompt = prompt_of("openai.responses", args)
    assert prompt is not None and [m["role"] for m in prompt.messages] == ["user", "assistant", "tool"]
    assert prompt.messages[1]["parts"] == [{**CALL, "id": "c1"}]
    assert prompt.messages[2]["parts"] == [{"type": "tool_call_response", "id": "c1", "response": {"t": 21}}]
    done = {
        "id": "r",
        "object": "response",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]}],
    }
    events = [{"type": "response.output_text.delta", "delta": "Sun"}, {"type": "response.completed", "response": done}]
    assert answer_of("openai.responses", _sse(*events)) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}
    ]
    assert assemble("openai.responses", _sse(*events)) == done


def test_decorated_calls_are_read_by_shape_and_older_spellings_by_name() -> None:
    older = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "text": "hi"}, {"type": "tool_call_response", "id": "1", "result": 3}],
        }
    ]
    assert answer_of("my_llm", older) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "hi"}, {"type": "tool_call_response", "id": "1", "response": 3}],
        }
    ]
    prompt = prompt_of("my_llm", {"messages": [{"role": "human", "content": "hello"}], "temperature": 0})
    assert prompt is not None and prompt.messages == (
        {"role": "user", "parts": [{"type": "text", "content": "hello"}]},
    )
    assert prompt_of("openai.embeddings", {"input": "x", "model": "m"}) is None
    assert (
        answer_of("openai.chat.completions", {"status": 429, "headers": {}, "body": {"error": {"message": "slow"}}})
        is None
    )
