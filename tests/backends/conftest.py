"""Fixtures of the backend tests: one real Jaeger per test module that asks for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.go_servers import Jaeger, start_jaeger


@pytest.fixture(scope="module")
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jaeger]:
    server = start_jaeger(tmp_path_factory.mktemp("jaeger"))
    try:
        yield server
    finally:
        server.stop()
