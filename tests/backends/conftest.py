"""The ``serve`` fixture: scripted OpenAI-compatible servers (tests/fake_openai.py), shut down after the test."""

from __future__ import annotations

import threading
from typing import Any, Iterator

import pytest

from fake_openai import FakeOpenAI


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[FakeOpenAI] = []

    def start(script: list[str], **kw: Any) -> FakeOpenAI:
        server = FakeOpenAI(script, **kw)
        threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.httpd.shutdown()
        server.httpd.server_close()
