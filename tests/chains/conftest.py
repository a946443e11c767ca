"""TWIST Track C wing fixtures: the local OpenAI-compatible server (its chain verifier and judges)."""

import pytest

from council.fakellm import serve_in_thread


@pytest.fixture
def fake_llm():
    server = serve_in_thread(port=0)
    yield server
    server.shutdown()
    server.server_close()
