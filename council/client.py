"""The one place Goldkey talks to an OpenAI-compatible endpoint (the real `openai` SDK).

The SDK's own retries are off (max_retries=0): every retry is Goldkey's, explicit and counted. Errors are
sorted into the ones worth retrying (429, 5xx, timeouts, connection errors) and the ones that are not.

The SDK and its HTTP client are imported on first use (`_sdk()`, `_ssl_context()`), not with this
module: importing them costs about a second of CPU, and every process that loads the apps imports this
module (the admin's autodiscovery reaches it through the keys and council services), so every management
command — freezing or exporting a key included — paid for an SDK it never calls.
"""

from __future__ import annotations

import functools
import logging
import os
import ssl
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

from goldkey.errors import ApplicationError
from goldkey.lib.jsonio import clipped
from goldkey.lib.jsonsafe import storable

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion


@functools.cache
def _sdk() -> ModuleType:
    """The `openai` module, imported the first time a client or an SDK error is needed (see above)."""
    # Imported here, not at the top: a heavy library only council calls need (module docstring).
    import openai
    import openai.types.chat  # ChatCompletion, the model of the responses

    return openai


class TransientCallError(Exception):
    """Worth retrying later; `retry_after` is the server's Retry-After in seconds, when it gave one."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class PermanentCallError(Exception):
    """Retrying will not help (bad request, authentication, unknown model)."""


def _retry_after(exc: openai.APIStatusError) -> float | None:
    raw = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None


# httpx logs every request at INFO: thousands of lines per run in the worker log.
logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpx2").setLevel(logging.WARNING)

_clients: dict[tuple, openai.OpenAI] = {}


def _api_key(member) -> str:
    if not member.api_key_env:
        return "unused"
    api_key = os.environ.get(member.api_key_env, "")
    if not api_key:
        raise ApplicationError(f"member '{member.name}': environment variable {member.api_key_env} is not set")
    return api_key


def client_for(member) -> openai.OpenAI:
    """One SDK client per endpoint, key and timeout in this process (building one costs ~30 ms: TLS setup)."""
    api_key = _api_key(member)
    key = (member.base_url, api_key, float(member.timeout_seconds))
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = _sdk().OpenAI(
            base_url=member.base_url, api_key=api_key, timeout=member.timeout_seconds, max_retries=0
        )
    return client


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The TLS settings the SDK would build for every client (CA bundle loaded: ~40 ms of CPU), built once per
    process and shared — an SSL context is not tied to an event loop, a connection pool is."""
    import httpx2  # with the SDK, on first use (module docstring)

    return httpx2.create_ssl_context()


def async_client_for(member) -> openai.AsyncOpenAI:
    """A fresh async SDK client: its connection pool belongs to the event loop it is used in, so one client
    per batch task (closed with `await client.close()`), never shared between loops."""
    openai = _sdk()
    return openai.AsyncOpenAI(
        base_url=member.base_url, api_key=_api_key(member), timeout=member.timeout_seconds, max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=_ssl_context()),
    )


def warm_up() -> None:
    """Pay the one-time costs (TLS settings, the SDK's lazy imports) when a worker process starts, not in
    the first batch."""
    _ssl_context()
    openai = _sdk()
    openai.AsyncOpenAI(base_url="http://127.0.0.1/v1", api_key="unused", max_retries=0, http_client=openai.DefaultAsyncHttpxClient(verify=_ssl_context()))


def _body(member, messages: list[dict]) -> dict:
    return {"model": member.model, "messages": messages, "temperature": member.temperature, "max_tokens": member.max_tokens}


def _sorted_error(exc: Exception, member) -> Exception:
    """The SDK's exception as TransientCallError (worth retrying) or PermanentCallError, its message what the
    endpoint said without what no column stores (a vote records it)."""
    openai = _sdk()
    if isinstance(exc, openai.RateLimitError):
        return TransientCallError(f"429 rate limited: {storable(exc.message)}", _retry_after(exc))
    if isinstance(exc, openai.InternalServerError):
        return TransientCallError(f"{exc.status_code} server error: {storable(exc.message)}", _retry_after(exc))
    if isinstance(exc, openai.APITimeoutError):
        return TransientCallError(f"timeout after {member.timeout_seconds:g}s")
    if isinstance(exc, openai.APIConnectionError):
        return TransientCallError(f"connection error: {storable(str(exc))}")
    if isinstance(exc, openai.APIStatusError):
        return PermanentCallError(f"{exc.status_code}: {storable(exc.message)}")
    return PermanentCallError(storable(str(exc)))  # e.g. a body that is not an OpenAI response


def _content(response: ChatCompletion) -> str:
    """The reply's text without what no column stores (a NUL character): it is cached, and a judge's reply
    is kept as it said it."""
    if not response.choices:
        raise PermanentCallError("response has no choices")
    return storable(response.choices[0].message.content or "")


# What a reply's model name and fingerprint are kept to: the response cache's columns
# (council.models.ResponseCache), the narrowest that records them.
REPORTED_MAX = 200


def _reported(value: str | None) -> str:
    """A name the endpoint reported about itself, as it can be stored: an endpoint is not a file to refuse,
    and a vote must not fail on what it says its model is called."""
    return storable(value or "")[:REPORTED_MAX]


def reported_joined(names, limit: int) -> str:
    """The names the endpoint reported over several replies (models, fingerprints), as a record keeps them:
    in first-seen order without repeats or blanks, comma-separated, cut to its column's `limit` (two names
    of REPORTED_MAX characters are longer than a 400-character column)."""
    return clipped(", ".join(dict.fromkeys(name for name in names if name)), limit)


class Reply(NamedTuple):
    """A reply's text and what the endpoint said produced it."""

    content: str
    model: str  # `response.model`: the snapshot that answered (a member's alias names none)
    system_fingerprint: str  # "" when the endpoint gives none


def chat(member, messages: list[dict]) -> str:
    """One completion; the reply text. Raises TransientCallError or PermanentCallError."""
    return chat_reply(member, messages).content


def chat_reply(member, messages: list[dict]) -> Reply:
    """`chat`, with the model and fingerprint the endpoint reported (what a record of who answered keeps)."""
    client = client_for(member)
    openai = _sdk()
    try:
        # The SDK's generic `post` (its documented way to call an endpoint directly) with the same request
        # body `chat.completions.create` would send: same transport, timeout, error classes and response
        # model, without re-validating our own plain-dict body against the typed parameters on every call
        # (~1 ms of CPU per call, a third of the SDK's cost here).
        response = client.post("/chat/completions", body=_body(member, messages), cast_to=openai.types.chat.ChatCompletion)
    except openai.APIError as exc:
        raise _sorted_error(exc, member) from exc
    return _reply(response)


async def chat_async(client: openai.AsyncOpenAI, member, messages: list[dict]) -> Reply:
    """`chat` on the async client: the same request and errors; many can be in flight at once. The reply
    comes with the model and fingerprint the endpoint reported, which council votes record."""
    openai = _sdk()
    try:
        response = await client.post("/chat/completions", body=_body(member, messages), cast_to=openai.types.chat.ChatCompletion)
    except openai.APIError as exc:
        raise _sorted_error(exc, member) from exc
    return _reply(response)


def _reply(response: ChatCompletion) -> Reply:
    return Reply(_content(response), _reported(response.model), _reported(response.system_fingerprint))
