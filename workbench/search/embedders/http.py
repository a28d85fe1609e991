"""What the HTTP embedders share: one sync client, batching, bounded retries, safe messages.

Each provider module says only where to send a batch, with which headers and body, and how to
read the vectors back; the loop, the retry policy and the error wording live here so the three
behave alike.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from workbench.search.embedders.base import EmbeddingError
from workbench.search.types import FloatArray

#: Statuses worth another try: rate limited, or the server's own trouble.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before giving up on a batch.

    The delay doubles from ``base_delay`` and never exceeds ``max_delay``; a server's
    ``Retry-After`` is honoured within the same bound, so a keystroke never waits minutes.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int, asked: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (from 0); ``asked`` is the server's."""
        wanted = self.base_delay * float(2**attempt) if asked is None else asked
        return max(0.0, min(wanted, self.max_delay))


def server_delay(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for: ``retry-after-ms`` (OpenAI) or ``Retry-After`` in seconds.

    The HTTP-date form of ``Retry-After`` is ignored (the backoff applies instead).
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class HttpSettings:
    """Transport settings shared by the HTTP embedders."""

    timeout: float = 30.0
    batch_size: int = 128
    retry: RetryPolicy = RetryPolicy()


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` masked (error bodies may echo a key)."""
    if secret:
        text = text.replace(secret, "***")
    return text


def where(url: str) -> str:
    """The URL without its query string, for messages (scheme, host, path)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


class HttpEmbedder:
    """Base of the HTTP embedders: subclasses give the URL, headers, body and response reader."""

    def __init__(
        self,
        spec: str,
        model_id: str,
        *,
        secret: str | None,
        settings: HttpSettings | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._spec = spec
        self._model_id = model_id
        self._secret = secret
        self.settings = settings or HttpSettings()
        self._sleep = sleep or time.sleep
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    # -- the Embedder protocol -------------------------------------------------------------------

    @property
    def spec(self) -> str:
        return self._spec

    @property
    def model_id(self) -> str:
        return self._model_id

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """One float64 row per text, sent in batches of ``settings.batch_size``."""
        rows: list[FloatArray] = []
        size = max(1, self.settings.batch_size)
        for start in range(0, len(texts), size):
            rows.append(self._embed_batch(list(texts[start : start + size])))
        if not rows:
            return np.zeros((0, 0), dtype=np.float64)
        widths = {row.shape[1] for row in rows}
        if len(widths) > 1:
            raise EmbeddingError(f"{self._spec}: batches came back with different dimensions")
        return np.vstack(rows)

    def close(self) -> None:
        """Close the connection pool (the embedder reopens one if used again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._spec!r})"

    # -- what a provider says ---------------------------------------------------------------------

    def url(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def body(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def vectors(self, payload: Any, count: int) -> list[Any]:
        """The ``count`` vectors in ``payload``, in input order (raise ValueError if absent)."""
        raise NotImplementedError

    # -- the loop -------------------------------------------------------------------------------

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                timeout = httpx.Timeout(
                    self.settings.timeout, connect=min(self.settings.timeout, 10)
                )
                self._client = httpx.Client(timeout=timeout)
            return self._client

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        payload = self._post(texts)
        try:
            found = self.vectors(payload, len(texts))
            matrix = np.asarray(found, dtype=np.float64)
        except (ValueError, TypeError, KeyError, IndexError) as err:
            raise EmbeddingError(
                f"{self._spec}: unexpected response from {where(self.url())}: {err}"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
            raise EmbeddingError(
                f"{self._spec}: expected {len(texts)} vectors from {where(self.url())}, "
                f"got an array of shape {matrix.shape}"
            )
        return matrix

    def _post(self, texts: list[str]) -> Any:
        url = self.url()
        retry = self.settings.retry
        for attempt in range(retry.max_retries + 1):
            last = attempt == retry.max_retries
            try:
                response = self._http().post(url, headers=self.headers(), json=self.body(texts))
            except httpx.TimeoutException:
                if last:
                    raise EmbeddingError(
                        f"{self._spec}: {where(url)} timed out after {self.settings.timeout:g} s"
                    ) from None
                self._sleep(retry.delay(attempt))
                continue
            except httpx.HTTPError as err:
                if last:
                    raise EmbeddingError(
                        f"{self._spec}: cannot reach {where(url)}: "
                        f"{redact(str(err) or type(err).__name__, self._secret)}"
                    ) from None
                self._sleep(retry.delay(attempt))
                continue
            if response.status_code in RETRY_STATUSES and not last:
                self._sleep(retry.delay(attempt, server_delay(response.headers)))
                continue
            if response.status_code >= 400:
                raise EmbeddingError(self._status_message(url, response))
            try:
                return response.json()
            except json.JSONDecodeError:
                raise EmbeddingError(
                    f"{self._spec}: {where(url)} answered HTTP {response.status_code} "
                    "with a body that is not JSON"
                ) from None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _status_message(self, url: str, response: httpx.Response) -> str:
        detail = _error_detail(response)
        hint = _STATUS_HINT.get(response.status_code, "")
        text = f"{self._spec}: HTTP {response.status_code} from {where(url)}"
        if detail:
            text += f": {detail}"
        if hint:
            text += f" ({hint})"
        return redact(" ".join(text.split()), self._secret)


_STATUS_HINT: Mapping[int, str] = {
    401: "check the API key",
    403: "the key may lack access to this model",
    404: "check the model or deployment name and the endpoint",
    429: "rate limited; retries exhausted",
}


def _error_detail(response: httpx.Response, limit: int = 200) -> str:
    """The provider's own error message if the body has one (OpenAI, Azure and Ollama shapes)."""
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text.strip()[:limit]
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:limit]
        if isinstance(error, str):
            return error[:limit]
    return json.dumps(payload)[:limit]
