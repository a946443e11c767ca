"""The one place Goldkey talks to an OpenAI-compatible endpoint (the real `openai` SDK).

The SDK's own retries are off (max_retries=0): every retry is Goldkey's, explicit and counted. Errors are
sorted into the ones worth retrying (429, 5xx, timeouts, connection errors) and the ones that are not.
"""

import logging
import os

import openai
from openai.types.chat import ChatCompletion

from goldkey.errors import ApplicationError


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

_clients: dict[tuple, openai.OpenAI] = {}


def client_for(member) -> openai.OpenAI:
    """One SDK client per endpoint, key and timeout in this process (building one costs ~30 ms: TLS setup)."""
    api_key = "unused"
    if member.api_key_env:
        api_key = os.environ.get(member.api_key_env, "")
        if not api_key:
            raise ApplicationError(f"member '{member.name}': environment variable {member.api_key_env} is not set")
    key = (member.base_url, api_key, float(member.timeout_seconds))
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = openai.OpenAI(
            base_url=member.base_url, api_key=api_key, timeout=member.timeout_seconds, max_retries=0
        )
    return client


def chat(member, messages: list[dict]) -> str:
    """One completion; the reply text. Raises TransientCallError or PermanentCallError."""
    client = client_for(member)
    try:
        # The SDK's generic `post` (its documented way to call an endpoint directly) with the same request
        # body `chat.completions.create` would send: same transport, timeout, error classes and response
        # model, without re-validating our own plain-dict body against the typed parameters on every call
        # (~1 ms of CPU per call, a third of the SDK's cost here).
        response = client.post(
            "/chat/completions",
            body={
                "model": member.model,
                "messages": messages,
                "temperature": member.temperature,
                "max_tokens": member.max_tokens,
            },
            cast_to=ChatCompletion,
        )
    except openai.RateLimitError as exc:
        raise TransientCallError(f"429 rate limited: {exc.message}", _retry_after(exc)) from exc
    except openai.InternalServerError as exc:
        raise TransientCallError(f"{exc.status_code} server error: {exc.message}", _retry_after(exc)) from exc
    except openai.APITimeoutError as exc:
        raise TransientCallError(f"timeout after {member.timeout_seconds}s") from exc
    except openai.APIConnectionError as exc:
        raise TransientCallError(f"connection error: {exc}") from exc
    except openai.APIStatusError as exc:
        raise PermanentCallError(f"{exc.status_code}: {exc.message}") from exc
    except openai.APIError as exc:  # e.g. a body that is not an OpenAI response
        raise PermanentCallError(str(exc)) from exc
    if not response.choices:
        raise PermanentCallError("response has no choices")
    return response.choices[0].message.content or ""
