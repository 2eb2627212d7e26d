"""Credentials in the model's base URL (``user:password@``, ``?key=``) and the API key never
reach an error message, the model's repr or a verbose log line."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from adapters.llm.openai_model import OpenAIChatModel
from adapters.llm.retry import RetryPolicy
from bot.cli import setup_logging
from engine.errors import GenerationError
from engine.ports import ChatMessage, ChatRequest
from engine.redaction import redact_text, redact_url
from tests.fakes.openai_server import FakeError, FakeOpenAIServer, FakeReply
from tests.test_llm.conftest import API_KEY

PASSWORD = "hunter2-pw"
QUERY_SECRET = "q-secret-77"
SECRETS = (PASSWORD, "alice:", QUERY_SECRET, API_KEY)


def _request() -> ChatRequest:
    return ChatRequest(
        model="fake-model",
        messages=(ChatMessage(role="user", content="hello"),),
        max_tokens=20,
        timeout_s=10.0,
    )


def _host(server: FakeOpenAIServer) -> str:
    return server.base_url.removeprefix("http://").removesuffix("/v1")


def _model(base_url: str) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=base_url,
        model="fake-model",
        api_key=API_KEY,
        timeout_s=10.0,
        retry=RetryPolicy(max_retries=0),
    )


@pytest.fixture
async def with_password(server: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = _model(f"http://alice:{PASSWORD}@{_host(server)}/v1")
    yield model
    await model.aclose()


def _clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked in {text!r}"


def test_redact_url_hides_userinfo_and_secret_parameters() -> None:
    url = "https://bob:pw@host:8080/v1?model=x&api_key=abc&SIG=1#access_token=t"
    assert (
        redact_url(url) == "https://***@host:8080/v1?model=x&api_key=***&SIG=***#access_token=***"
    )
    assert redact_url("postgresql+asyncpg://u:p@db/tavern") == "postgresql+asyncpg://***@db/tavern"
    assert redact_url("http://host/v1?key=k&password=p") == "http://host/v1?key=***&password=***"
    assert redact_url("http://host/v1") == "http://host/v1"
    assert redact_text("failed at http://a:b@h/x?token=t, sorry") == (
        "failed at http://***@h/x?token=***, sorry"
    )


async def test_a_failing_call_names_the_host_but_no_credential(
    server: FakeOpenAIServer, with_password: OpenAIChatModel
) -> None:
    # The server even echoes the key and the whole URL back in its error body.
    echoed = f"bad key {API_KEY} for http://alice:{PASSWORD}@{_host(server)}/v1?key={QUERY_SECRET}"
    server.script(FakeError(status=401, message=echoed))
    with pytest.raises(GenerationError) as caught:
        await with_password.complete(_request())
    shown = str(caught.value)
    assert f"model server {_host(server)} answered 401" in shown
    _clean(shown)
    _clean(repr(with_password))


async def test_a_failing_stream_names_no_credential(
    server: FakeOpenAIServer, with_password: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="Once upon a time", chunk_chars=4, error_after_chunks=1))
    with pytest.raises(GenerationError) as caught:
        async for _ in with_password.stream(_request()):
            pass
    _clean(str(caught.value))


async def test_a_query_key_in_the_base_url_is_never_shown(server: FakeOpenAIServer) -> None:
    model = _model(f"{server.base_url}?key={QUERY_SECRET}")
    try:
        with pytest.raises(GenerationError) as caught:
            await model.complete(_request())
        _clean(str(caught.value))
        _clean(repr(model))
    finally:
        await model.aclose()


async def test_verbose_logs_hide_the_credentials(
    server: FakeOpenAIServer,
    with_password: OpenAIChatModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup_logging(verbose=True)  # what `tavernbot -v` does; filters the root's handlers
    server.script(FakeError(status=500, message="down"))
    with caplog.at_level(logging.DEBUG), pytest.raises(GenerationError):
        await with_password.complete(_request())
    assert f"{_host(server)}/v1/chat/completions" in caplog.text  # the HTTP line is there
    _clean(caplog.text)
