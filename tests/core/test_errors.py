"""The public errors and warnings: they report the package as their module, and survive pickling."""

from __future__ import annotations

import inspect
import pickle
import traceback
from typing import Any

import pytest

import otel_agent_replay
from otel_agent_replay.core import _errors


def _instance(cls: type[BaseException]) -> BaseException:
    """An instance made the way the SDK makes it: with every constructor argument it has."""
    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
    if any(p.kind is p.VAR_POSITIONAL for p in params) or not params:
        return cls(f"{cls.__name__} happened at search#2; the fix follows")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in params:
        value: Any = {"path": "tapes/run.jsonl", "line": 7, "host": "10.0.0.9", "port": 443}.get(p.name, p.name)
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(f"{p.name} of {cls.__name__}")
    return cls(*args, **kwargs)


def test_every_error_and_warning_is_public_and_reports_the_package_as_its_module() -> None:
    classes = _errors.PUBLIC_CLASSES
    assert len(classes) >= 20 and _errors.AgentReplayError in classes and _errors.OtlpWarning in classes
    for cls in classes:
        assert cls.__module__ == "otel_agent_replay", cls
        assert getattr(otel_agent_replay, cls.__name__) is cls
        assert cls.__name__ in otel_agent_replay.__all__


@pytest.mark.parametrize("cls", _errors.PUBLIC_CLASSES, ids=lambda c: c.__name__)
def test_pickling_and_repr_keep_the_class_its_message_and_its_attributes(cls: type[BaseException]) -> None:
    error = _instance(cls)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls and str(again) == str(error) and again.args == error.args
    assert {k: v for k, v in vars(again).items()} == {k: v for k, v in vars(error).items()}
    assert repr(again) == repr(error) and repr(error).startswith(f"{cls.__name__}(")


def test_a_traceback_names_the_public_class() -> None:
    try:
        raise otel_agent_replay.TapeDrift("search#2: drift in run r1")
    except otel_agent_replay.TapeDrift as error:
        last = traceback.format_exception_only(type(error), error)[-1]
    assert last == "otel_agent_replay.TapeDrift: search#2: drift in run r1\n"
    assert "_errors" not in last
