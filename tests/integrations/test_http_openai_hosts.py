"""Who answered an OpenAI-compatible request is read from the host it was sent to (Mistral, Groq,
OpenRouter, a local server …), spelled as the GenAI conventions' well-known ``gen_ai.provider.name``
values where they exist; every built-in provider's name is checked against the conventions' own list."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from helpers.model_server import fake_provider
from helpers.rawtape import raw_spans
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import GenAiProviderNameValues

from otel_agent_replay import agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import HttpRoute
from otel_agent_replay.integrations.providers import DEFAULT_ROUTES, PROVIDERS, provider_for_host
from otel_agent_replay.integrations.providers._openai import HOSTS
from otel_agent_replay.integrations.providers._openai import by_host as openai_by_host

WELL_KNOWN = frozenset(v.value for v in GenAiProviderNameValues)
"""The conventions' names (from opentelemetry-semantic-conventions, not typed in here)."""
NO_CONVENTION_NAME = frozenset({"ollama", "openrouter", "together_ai", "fireworks_ai"})
"""Products the conventions do not name yet: they are written under their own name."""
CHAT = next(route for route in DEFAULT_ROUTES if route.name == "openai.chat.completions")


@pytest.mark.parametrize(
    ("host", "provider"),
    [
        ("api.openai.com", "openai"),
        ("api.mistral.ai", "mistral_ai"),
        ("api.groq.com", "groq"),
        ("openrouter.ai", "openrouter"),
        ("api.deepseek.com", "deepseek"),
        ("api.x.ai", "x_ai"),
        ("generativelanguage.googleapis.com", "gcp.gemini"),  # Gemini's OpenAI-compatible endpoint
        ("eu.api.mistral.ai", "mistral_ai"),  # a regional subdomain of a known host
        ("my-resource.openai.azure.com", "azure.ai.openai"),
        ("127.0.0.1", "openai"),  # a local vLLM or LM Studio: the protocol it speaks
        ("gateway.internal.example", "openai"),
        ("notapi.mistral.ai.example.com", "openai"),  # a known name inside another host is not that host
    ],
)
def test_the_provider_of_an_openai_compatible_route_comes_from_the_host(host: str, provider: str) -> None:
    assert provider_for_host(CHAT, host) == provider


def test_a_route_of_another_provider_keeps_its_own_name_whatever_the_host() -> None:
    by_name = {route.name: route for route in DEFAULT_ROUTES}
    assert provider_for_host(by_name["anthropic.messages"], "api.groq.com") == "anthropic"
    assert provider_for_host(by_name["gemini.generate_content"], "api.openai.com") == "gcp.gemini"
    assert provider_for_host(by_name["cohere.chat"], "openrouter.ai") == "cohere"
    assert provider_for_host(by_name["ollama.chat"], "api.mistral.ai") == "ollama"


@pytest.mark.parametrize(
    ("host", "provider"),
    [
        ("generativelanguage.googleapis.com", "gcp.gemini"),
        ("aiplatform.googleapis.com", "gcp.vertex_ai"),
        ("us-central1-aiplatform.googleapis.com", "gcp.vertex_ai"),
        ("europe-west4-aiplatform.googleapis.com", "gcp.vertex_ai"),
        ("aiplatform.googleapis.com.example.com", "gcp.gemini"),
        ("127.0.0.1", "gcp.gemini"),
    ],
)
def test_gemini_paths_on_a_vertex_ai_host_are_vertex_ai(host: str, provider: str) -> None:
    by_name = {route.name: route for route in DEFAULT_ROUTES}
    for name in ("gemini.generate_content", "gemini.stream_generate_content", "gemini.batch_embed_contents"):
        assert provider_for_host(by_name[name], host) == provider


def test_every_provider_name_is_the_conventions_name_where_there_is_one() -> None:
    names = {provider.name for provider in PROVIDERS} | {route.provider for route in DEFAULT_ROUTES}
    names |= set(HOSTS.values()) | {openai_by_host("x.openai.azure.com")}
    names |= {provider_for_host(route, "us-central1-aiplatform.googleapis.com") for route in DEFAULT_ROUTES}
    assert names - NO_CONVENTION_NAME <= WELL_KNOWN, sorted(names - NO_CONVENTION_NAME - WELL_KNOWN)
    assert not NO_CONVENTION_NAME & WELL_KNOWN  # none of these has been given a conventions' name since


@pytest.mark.parametrize(
    ("base_url", "provider"),
    [
        ("http://api.mistral.ai/v1", "mistral_ai"),
        ("http://api.groq.com/openai/v1", "groq"),
        ("http://openrouter.ai/api/v1", "openrouter"),
    ],
)
def test_a_real_sdk_call_to_a_compatible_host_is_recorded_and_replayed_under_its_provider(
    tape: Path, base_url: str, provider: str
) -> None:
    """The openai SDK aimed at the provider's own host, through a forward proxy on 127.0.0.1 (the fake
    provider answers the proxied request), so the request's host is the real one and no name
    resolution is needed; the replay opens no connection at all."""
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": "Hello"}]
    with fake_provider() as fp:

        def client() -> openai.OpenAI:
            proxied = openai.DefaultHttpxClient(proxy=fp.url)
            return openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0, http_client=proxied)

        with record(tape), agent_run("compatible"):
            live = client().chat.completions.create(model="some-model", messages=messages)
        with replay(tape) as session:
            replayed = client().chat.completions.create(model="some-model", messages=messages)
        assert len(fp.requests) == 1 and fp.requests[0][0].startswith(base_url)  # absolute form: it was proxied
    assert replayed == live and replayed.choices[0].message.content == "You said: Hello"
    assert (session.stats.hits, session.stats.misses, session.stats.live_model_calls) == (1, 0, 0)
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert span.attrs[A.GEN_AI_PROVIDER_NAME] == provider
    assert span.attrs["agent_replay.function"] == "openai.chat.completions"


def test_a_route_with_a_host_names_the_provider_of_a_local_server(tape: Path) -> None:
    """A local OpenAI-compatible server (vLLM) keeps ``openai`` unless a route for its host says otherwise."""
    local = HttpRoute("vllm.chat", "/chat/completions", "vllm", host="127.0.0.1")
    with fake_provider() as fp:
        client = openai.OpenAI(base_url=fp.openai_url, api_key="sk-test", max_retries=0)
        with record(tape, http_routes=[local]), agent_run("local"):
            client.chat.completions.create(model="local-model", messages=[{"role": "user", "content": "Hi"}])
        with record(tape.with_name("default.jsonl")), agent_run("local"):
            client.chat.completions.create(model="local-model", messages=[{"role": "user", "content": "Hi"}])
    providers = [
        s.attrs[A.GEN_AI_PROVIDER_NAME]
        for path in (tape, tape.with_name("default.jsonl"))
        for s in raw_spans(path)
        if s.attrs.get(A.KIND) == "llm"
    ]
    assert providers == ["vllm", "openai"]
