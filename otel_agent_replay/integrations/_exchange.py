"""One intercepted HTTP request, whatever client sent it: what it is and what to do with it.

A client's capture point turns its request into a ``Request`` and asks ``intercept``. None means
"not ours: send it as usual" (no record or replay in this context, instrumentation suppressed, a
host the replay lets through). Otherwise the ``Exchange`` says which step it is (a model route, or
an HTTP step ``{METHOD} {host}{path}``) and carries it out:

- recording: ``begin`` starts the step; the client sends the request and hands the response back
  through ``finish`` (a whole body) or ``stream`` (a ``StreamRecorder`` it feeds as chunks pass to
  the caller, with ``closed`` when the stream ends), or ``fail``;
- replaying: ``answer`` / ``answer_async`` return the recorded result (a dict, see ``_wire``) for the
  client to build its own response type from, or raise what the replay decided (a miss, drift, a
  refused side effect).

The client modules (``clients``) only translate; nothing here knows a client's types.
"""

from __future__ import annotations

import hashlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from otel_agent_replay.core import ReplayDivergence
from otel_agent_replay.instrumentation import (
    StepInFlight,
    current_replay,
    prepare,
    start_step,
    step_run,
)

from . import _activation
from ._context import replaying, suppressed
from ._framing import framing_for
from ._http_steps import http_args, http_spec
from ._request import Request
from ._routes import match
from ._wire import StreamRecorder, body_result, kept_headers
from .providers import provider_for_host

_log = logging.getLogger(__name__)


def _json_body(content: bytes) -> dict[str, Any] | None:
    """A model route's JSON body as arguments (an object's fields; anything else under ``body``)."""
    try:
        body = orjson.loads(content or b"null")
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else {"body": body}


_provider_specs: dict[tuple[int, str], Any] = {}


def _spec_for(route: Any, provider: str) -> Any:
    """A route's spec when another provider answers its path (made once per route and provider)."""
    key = (id(route), provider)
    spec = _provider_specs.get(key)
    if spec is None or spec.name != route.name:
        spec = _provider_specs[key] = route.spec_for(provider)
    return spec


_NO_ROUTE: Any = object()
_matches: tuple[object, dict[tuple[str, str, str], Any]] = ((), {})
"""The routes last matched against and, per method, host and path, what matched (``_NO_ROUTE``: nothing)."""


def _matched(routes: tuple[Any, ...], request: Request) -> Any:
    """``match`` remembered per method, host and path for the routes in force (a ``Matched`` is never changed)."""
    global _matches
    held, memo = _matches
    if held is not routes:  # other routes (another replay's ``http_routes=``): start again
        memo = {}
        _matches = (routes, memo)
    where = (request.method, request.host, request.path)
    found = memo.get(where)
    if found is None:
        found = match(routes, *where)
        if len(memo) > 10_000:  # an agent that walks an endless space of URLs: keep memory bounded
            memo.clear()
        memo[where] = _NO_ROUTE if found is None else found
    return None if found is _NO_ROUTE else found


def intercept(request: Request) -> Exchange | None:
    """What to do with a request: None to send it untouched, else the ``Exchange`` that records or answers it."""
    settings = _activation.settings()
    if settings is None or suppressed():
        return None
    session = replaying()
    if session is not None:
        passes = getattr(session, "passes_through", None)
        if passes is not None and passes(request.host, request.port):
            return None  # counted by the session; the socket guard lets it through too
    spec: Any = None
    args: dict[str, Any] | None = None
    matched = _matched(settings.routes, request) if settings.routes else None
    if matched is not None:
        body = _json_body(request.body)
        if body is not None:
            provider = provider_for_host(matched.route, request.host)
            spec = matched.route.spec if provider == matched.route.provider else _spec_for(matched.route, provider)
            args = {**body, **matched.placeholders}
    if spec is None:
        spec = http_spec(request, settings)
        args = http_args(request)
    assert args is not None
    if session is not None:
        return Exchange(request, spec, args, session, None)
    observer = current_replay.get()  # a replay that records (mode once or all): its view() shows this step
    # Recording: a model call joins the process's only run even from a bare thread (as decorated model
    # calls do); any other request only from a run's or the record block's context (its implicit run),
    # so a library's background telemetry (a thread started outside the block) never becomes a step.
    run = step_run(context_only=matched is None)
    if run is None:
        return None
    exchange = Exchange(request, spec, args, None, run)
    exchange.observer = observer
    return exchange


def response_result(status: int, headers: Any, content: bytes, started: float | None = None) -> dict[str, Any]:
    """A whole response as a step's result (a stream in a framing we know: its events)."""
    kept = kept_headers(headers)
    framing = framing_for(headers)
    if framing is None:
        return body_result(status, kept, content)
    recorder = StreamRecorder(framing, time.monotonic() if started is None else started)
    recorder.feed(content)
    return recorder.result(status, kept)


_divergences: weakref.WeakKeyDictionary[object, dict[str, BaseException]] = weakref.WeakKeyDictionary()
_diverged: set[int] = set()
"""The ids of replays that have diverged: a request of any other replay skips the weak mapping's look-up
(an id reused by a later replay only sends it the long way, to ``_divergences``, which knows)."""


class Exchange:
    """One request that is a step: recorded, or answered from the tape."""

    def __init__(self, request: Request, spec: Any, args: dict[str, Any], session: Any, run: Any) -> None:
        self.request = request
        self.spec = spec
        self.args = args
        self.session = session
        self.run = run
        self.step: StepInFlight | None = None
        self.started = 0.0
        self.seq = 0
        self.observer: Any = None
        """A replay that records (modes ``once`` and ``all``): told each recorded step, for its ``view()``."""

    @property
    def replaying(self) -> bool:
        """True when the tape answers this request (nothing is sent)."""
        return self.session is not None

    @property
    def pace(self) -> bool:
        """Whether a replayed stream's events come at their recorded offsets."""
        return bool(getattr(self.session, "pace", False))

    # --- replay ------------------------------------------------------------------------

    def _key(self) -> str:
        text = orjson.dumps(self.args, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        return hashlib.sha256(self.spec.name.encode() + text).hexdigest()

    def _seen(self) -> tuple[str, BaseException | None]:
        if id(self.session) not in _diverged:  # no divergence in this replay yet: no key to compute
            return "", None
        seen = _divergences.get(self.session)
        if not seen:
            return "", None
        key = self._key()
        return key, seen.get(key)

    def _remember(self, key: str, exc: BaseException) -> None:
        _divergences.setdefault(self.session, {})[key or self._key()] = exc
        if len(_diverged) > 10_000:  # ids of replays long gone: only makes the next look-ups take the long way
            _diverged.clear()
        _diverged.add(id(self.session))

    def answer(self, live: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The recorded result for this request; ``live`` sends it for real when the replay lets it
        (a read-only miss under ``new_episodes``, ``models="live"``) and returns that result."""
        key, seen = self._seen()
        if seen is not None:
            raise seen  # an SDK retrying a divergence: the same error, not a new step
        try:
            result = self.session.call(self.spec, lambda **_: live(), (), self.args)
        except ReplayDivergence as exc:
            self._remember(key, exc)
            raise
        return result  # type: ignore[no-any-return]

    async def answer_async(self, live: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """``answer`` for async clients."""
        key, seen = self._seen()
        if seen is not None:
            raise seen

        async def send(**_: Any) -> dict[str, Any]:
            return await live()

        try:
            result = await self.session.call_async(self.spec, send, (), self.args)
        except ReplayDivergence as exc:
            self._remember(key, exc)
            raise
        return result  # type: ignore[no-any-return]

    # --- record ------------------------------------------------------------------------

    def begin(self) -> None:
        """Start the step (call just before sending)."""
        prep = prepare(self.spec, self.run, (), self.args)
        self.seq = prep.ids.seq
        self.step = start_step(self.spec, prep)
        self.started = time.monotonic()

    def _observe(self, result: object, error: BaseException | None) -> None:
        observe = getattr(self.observer, "observe_recorded", None)
        if observe is not None:
            observe(self.spec, self.seq, self.args, result, error)

    def sent(self) -> None:
        """The request went out and its response head came back: the rest of the step (reading a
        stream) happens in the caller's context, not the step's."""
        step = self.step
        if step is not None:
            for undo in reversed(step.tokens):
                undo()
            step.tokens = []

    def fail(self, exc: BaseException) -> None:
        """Sending (or reading) failed: the step ends with the error."""
        step = self.step
        if step is not None:
            if step.tokens:
                self.sent()
            step.fail(exc)
            self._observe(None, exc)

    def finish(self, status: int, headers: Any, content: bytes) -> None:
        """The whole response arrived."""
        step = self.step
        if step is None:
            return
        result = response_result(status, headers, content, self.started)
        step.finish(result)
        self._observe(result, None)

    def stream(self, status: int, headers: Any) -> Stream | None:
        """A recorder for a streamed response in a framing we know (None: read it whole and ``finish``).

        The client's stream wrapper feeds it and closes it; the run's end also ends a stream the
        caller never closed.
        """
        step = self.step
        framing = framing_for(headers)
        if step is None or framing is None or str(headers.get("content-encoding", "identity")) not in ("identity", ""):
            return None
        return Stream(step, StreamRecorder(framing, self.started), status, kept_headers(headers), self._observe)


class Stream:
    """A live stream being recorded: ``feed`` each chunk as it passes to the caller, ``close`` at its end."""

    def __init__(
        self,
        step: StepInFlight,
        recorder: StreamRecorder,
        status: int,
        headers: dict[str, str],
        observe: Callable[[object, BaseException | None], None],
    ) -> None:
        self._step = step
        self._observe = observe
        self._recorder = recorder
        self._status = status
        self._headers = headers
        self._done = False
        self._token = 0
        # a stream the SDK never closes is ended by its run's end, so its step still reaches the tape
        self._token = step.run.stream_opened(step.spec.name, self.close)

    def feed(self, chunk: bytes) -> None:
        self._recorder.feed(chunk)

    def close(self) -> None:
        """End the step with what arrived so far (once; later calls do nothing)."""
        if self._done:
            return
        self._done = True
        try:
            if self._step.run.stream_closed(self._token):  # not ended already by the run's end
                result = self._recorder.result(self._status, self._headers)
                self._step.finish(result)
                self._observe(result, None)
        except Exception:  # recording must never break the caller's stream
            _log.exception("could not record an HTTP event stream")
