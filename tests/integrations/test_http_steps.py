"""HTTP steps: every request from a run that no model route matches is a step ``{METHOD} {host}{path}``,
answered from the tape in a replay whatever the host (loopback included), with its side effect by method."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import httpx
import pytest
from helpers.counting_server import counting_server
from helpers.rawtape import raw_spans
from helpers.rest_server import IMAGE, rest_api
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY  # what the SDK's span processors set

from otel_agent_replay import agent_run, load_tape, record, replay, tool
from otel_agent_replay.core import SideEffectRefused, TapeDrift, TapeMiss
from otel_agent_replay.core import attributes as A


def _steps(tape: Path) -> list[object]:
    return [step for run in load_tape(tape).runs for step in run.steps]


def test_a_get_is_served_from_the_tape_with_the_server_still_up(tape: Path) -> None:
    with rest_api() as api:
        with record(tape), agent_run("rest"):
            live = httpx.get(api.url + "/items", params={"q": "lamp", "page": "2"})
            image = httpx.get(api.url + "/image")
        with replay(tape) as session:
            again = httpx.get(api.url + "/items", params={"q": "lamp", "page": "2"})
            image_again = httpx.get(api.url + "/image")
        assert len(api.requests) == 2  # the replay sent nothing
    assert again.status_code == live.status_code == 200
    assert again.json() == live.json() and "x-served" not in again.headers  # headers only from the allow-list
    assert image_again.content == image.content == IMAGE  # bytes that are not text come back exactly
    assert session.stats.hits == 2 and session.stats.live_tool_calls == 0
    spans = {s.name: s for s in raw_spans(tape)}
    span = spans[f"execute_tool GET {api.authority}/items"]
    assert span.attrs[A.KIND] == "http" and span.attrs[A.SIDE_EFFECT] == "read_only"
    assert span.attrs[A.HTTP_REQUEST_METHOD] == "GET" and span.attrs[A.SERVER_ADDRESS] == "127.0.0.1"
    assert span.attrs[A.URL_PATH] == "/items" and span.attrs[A.HTTP_RESPONSE_STATUS_CODE] == 200
    step = next(s for s in _steps(tape) if s.tool == f"GET {api.authority}/items")  # type: ignore[attr-defined]
    assert step.args == {"query": {"q": "lamp", "page": "2"}}  # type: ignore[attr-defined]


def test_a_post_is_refused_unless_stubbed_and_never_sent(tape: Path) -> None:
    name_of = "POST {}/orders".format
    with rest_api() as api:
        with record(tape), agent_run("orders"):
            created = httpx.post(api.url + "/orders", json={"sku": "lamp"})
        with pytest.raises(SideEffectRefused, match="never runs during a replay"), replay(tape):
            httpx.post(api.url + "/orders", json={"sku": "lamp"})
        with replay(tape, stub=[name_of(api.authority)]) as session:
            stubbed = httpx.post(api.url + "/orders", json={"sku": "lamp"})
        assert len(api.requests) == 1  # only the recording reached the server
    assert stubbed.status_code == created.status_code == 201 and stubbed.json() == created.json()
    assert session.stats.stubbed_side_effects == 1 and session.stats.real_side_effects == 0
    assert [s.side_effect for s in _steps(tape)] == ["external"]  # type: ignore[attr-defined]


def test_http_side_effects_declares_a_read_only_post(tape: Path) -> None:
    rules = {"POST 127.0.0.1:*/search": "read_only"}
    with rest_api() as api:
        with record(tape, http_side_effects=rules), agent_run("search"):
            live = httpx.post(api.url + "/search", json={"q": "desk"})
        with replay(tape, http_side_effects=rules) as session:
            again = httpx.post(api.url + "/search", json={"q": "desk"})
        assert len(api.requests) == 1
    assert again.json() == live.json() and session.stats.hits == 1
    assert [s.side_effect for s in _steps(tape)] == ["read_only"]  # type: ignore[attr-defined]


def test_an_unrecorded_loopback_request_is_a_miss_and_no_byte_arrives(tape: Path) -> None:
    with rest_api() as api, counting_server() as other:
        with record(tape), agent_run("loopback"):
            httpx.get(api.url + "/items")
        with pytest.raises(TapeMiss, match=r"passthrough=\['127.0.0.1:\d+'\]"), replay(tape, allow_unused=True):
            httpx.get(f"http://127.0.0.1:{other.port}/health")
        assert other.connections == 0 and other.received == 0


def test_passthrough_lets_a_host_through_and_counts_it(tape: Path) -> None:
    with rest_api() as api, counting_server() as local:
        with record(tape), agent_run("through"):
            httpx.get(api.url + "/items")
        with replay(tape, passthrough=[f"127.0.0.1:{local.port}"]) as session:
            httpx.get(api.url + "/items")
            answer = httpx.get(f"http://127.0.0.1:{local.port}/health")
        assert local.connections == 1 and len(api.requests) == 1
    assert answer.text == "ok"
    assert session.stats.passthrough_requests == 1 and session.stats.hits == 1
    assert [s.tool for s in _steps(tape)] == [f"GET {api.authority}/items"]  # type: ignore[attr-defined]


@tool(side_effect="read_only")
def lookup(base: str, sku: str) -> dict[str, object]:
    """A tool whose body calls a REST API: its requests are its child steps."""
    response = httpx.get(base + "/items", params={"sku": sku})
    return {"count": len(response.json()["items"])}


def test_requests_inside_a_tool_are_its_children_and_are_served_with_it(tape: Path) -> None:
    with rest_api() as api:
        with record(tape), agent_run("tool"):
            live = lookup(api.url, "lamp")
        with replay(tape) as session:
            again = lookup(api.url, "lamp")
        assert len(api.requests) == 1  # the tool's body did not run, so its request was not made
    assert again == live
    tool_step, http_step = _steps(tape)
    assert http_step.parent_step_id == tool_step.step_id  # type: ignore[attr-defined]
    assert session.stats.unused == 0 and session.stats.hits == 1


def test_requests_outside_the_runs_context_and_suppressed_ones_are_not_steps(tape: Path) -> None:
    with rest_api() as api:
        with record(tape), agent_run("quiet"):
            # a library's telemetry thread, started outside the run, and OpenTelemetry's own exporters
            worker = threading.Thread(target=lambda: httpx.get(api.url + "/items", params={"ping": "1"}))
            worker.start()
            worker.join()
            token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
            try:
                httpx.get(api.url + "/items", params={"export": "1"})
            finally:
                otel_context.detach(token)
            httpx.get(api.url + "/items", params={"agent": "1"})
        assert len(api.requests) == 3
    assert [s.args for s in _steps(tape)] == [{"query": {"agent": "1"}}]  # type: ignore[attr-defined]


def test_credentials_never_reach_the_tape(tape: Path) -> None:
    secret = "sk-proj-4fA9c2Lq7Zr1Xw8Mn3Bv6Tk0Yh5Ps2Dg"
    with rest_api() as api, record(tape), agent_run("secrets"):
        httpx.get(
            api.url + "/items",
            params={"key": "AIzaSyD4x9Lq2Zr7Xw1Mn8Bv3Tk6Yh0Ps5DgQwE", "api_key": secret, "q": "lamp"},
            headers={"Authorization": f"Bearer {secret}", "Cookie": "session=abc123-cookie", "X-Api-Key": secret},
        )
    text = tape.read_text()
    for leaked in (secret, "AIzaSyD4x9Lq2Zr7Xw1Mn8Bv3Tk6Yh0Ps5DgQwE", "abc123-cookie", "s3cr3t-cookie-value"):
        assert leaked not in text
    assert '"q":"lamp"' in text.replace("\\", "")  # the rest of the query is kept


def test_view_shows_the_same_http_model_steps_and_tokens_when_recording_and_replaying(tape: Path) -> None:
    import openai
    from helpers.model_server import fake_provider

    def agent(url: str) -> str:
        client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
        reply = client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hello"}])
        lookup_url = url.removesuffix("/v1")
        httpx.get(lookup_url + "/health")
        return reply.choices[0].message.content or ""

    with fake_provider() as fp:
        with replay(tape, mode="once") as recording:  # no agent_run: the implicit run
            agent(fp.openai_url)
        with replay(tape) as replaying:
            agent(fp.openai_url)
    recorded, replayed = recording.view(), replaying.view()
    assert recorded.step_count == replayed.step_count == 2
    assert recorded.tokens_in == replayed.tokens_in > 0
    assert recorded.tokens_out == replayed.tokens_out > 0


def test_a_replayed_httpx_response_is_read_by_the_client_as_a_live_one_is(tape: Path) -> None:
    def facts(client: httpx.Client, url: str) -> list[object]:
        got = client.get(url, params={"q": "lamp"})
        with client.stream("GET", url, params={"q": "lamp"}) as streamed:
            unread = (streamed.is_stream_consumed, streamed.is_closed)
            body = b"".join(streamed.iter_bytes())
        return [
            type(got),
            got.status_code,
            isinstance(got.elapsed, dt.timedelta),  # set as the client reads the body (unset, it raises)
            got.is_closed,
            got.headers["content-length"] == str(len(got.content)),
            got.json(),
            unread,
            streamed.is_stream_consumed,
            body == got.content,
        ]

    with rest_api() as api, httpx.Client() as client:
        with record(tape), agent_run("rest"):
            live = facts(client, api.url + "/items")
        with replay(tape) as session:
            again = facts(client, api.url + "/items")
        assert len(api.requests) == 2  # the replay sent nothing
    assert again == live and live[6] == (False, False)
    assert session.stats.hits == 2


def test_replayed_httpx_responses_of_one_recorded_head_share_no_headers_or_arguments(tape: Path) -> None:
    # the headers of a recorded head are made once per replay process and copied into each response,
    # a query string is parsed once: nothing one response or call changes reaches the next
    with rest_api() as api, httpx.Client() as client:
        params = {"q": ["lamp", "desk"], "page": "2"}
        with record(tape), agent_run("rest"):
            live = [client.get(api.url + "/items", params=params) for _ in range(3)]
        with replay(tape) as session:
            first = client.get(api.url + "/items", params=params)
            first.headers["x-mine"] = "changed"
            del first.headers["content-type"]
            session.view().calls_of(f"GET {api.authority}/items")[0].args["query"]["q"].append("chair")
            second = client.get(api.url + "/items", params=params)
            with client.stream("GET", api.url + "/items", params=params) as third:
                third.headers["content-length"] = "0"
                body = third.read()
        called = session.view().calls_of(f"GET {api.authority}/items")
    assert session.stats.hits == 3 and len(api.requests) == 3  # the replay sent nothing
    assert "x-mine" not in second.headers and second.headers["content-type"] == live[1].headers["content-type"]
    assert second.headers["content-length"] == str(len(live[1].content)) and body == live[2].content
    assert [c.args["query"] for c in called[1:]] == [{"q": ["lamp", "desk"], "page": "2"}] * 2


def test_a_request_sent_again_after_drift_gets_the_same_error_and_is_not_a_new_step(tape: Path) -> None:
    # an SDK that retries a request the replay refused: the same error again, the divergence counted once;
    # another replay (with its own drift) starts with nothing remembered
    with rest_api() as api:
        with record(tape), agent_run("rest"):
            httpx.get(api.url + "/items", params={"q": "lamp"})
        errors: list[BaseException] = []
        for _ in range(2):
            with pytest.raises(TapeDrift), replay(tape, allow_unused=True) as session:
                for _ in range(3):
                    try:
                        httpx.get(api.url + "/items", params={"q": "desk"})
                    except TapeDrift as exc:
                        errors.append(exc)
            assert session.stats.drifts == 1 and session.stats.hits == 0
        assert len(api.requests) == 1  # the replays sent nothing
    assert len(errors) == 6 and errors[0] is errors[1] is errors[2] and errors[3] is errors[4] is errors[5]
    assert errors[0] is not errors[3]


def test_a_query_string_is_parsed_once_unless_it_carries_a_credential() -> None:
    from otel_agent_replay.integrations import _http_steps
    from otel_agent_replay.integrations._request import Request

    plain = Request("GET", "https", "api.example.com", None, "/v1/items", "q=lamp&q=desk&page=2")
    signed = Request("GET", "https", "api.example.com", None, "/v1/items", "q=lamp&key=opaque-credential-value")
    first, again = _http_steps.http_args(plain), _http_steps.http_args(plain)
    assert first == again == {"query": {"q": ["lamp", "desk"], "page": "2"}}
    assert first["query"]["q"] is not again["query"]["q"]  # each call its own lists
    assert _http_steps.http_args(signed)["query"]["key"] != "opaque-credential-value"
    assert plain.query in _http_steps._queries
    assert not any("opaque-credential" in text for text in _http_steps._queries)  # the credential is not held
