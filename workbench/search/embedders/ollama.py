"""Ollama's batch embedding API (``POST {host}/api/embed`` with an ``input`` list)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from workbench.search.embedders.http import HttpEmbedder, HttpSettings

#: Where the Ollama client looks when neither the agent nor ``OLLAMA_HOST`` says otherwise.
DEFAULT_HOST = "http://localhost:11434"
DEFAULT_PORT = 11434


def ollama_base_url(host: str | None) -> str:
    """A base URL from an Ollama host setting, read as the Ollama client reads ``OLLAMA_HOST``.

    ``host`` may omit the scheme (``http`` then) and the port (11434 then, when the scheme was
    omitted too): ``0.0.0.0``, ``gpu-box:11434`` and ``https://ollama.example`` all work.
    """
    text = (host or "").strip().rstrip("/")
    if not text:
        return DEFAULT_HOST
    if "://" not in text:
        parts = urlsplit(f"http://{text}")
        netloc = parts.netloc if parts.port is not None else f"{parts.netloc}:{DEFAULT_PORT}"
        return f"http://{netloc}{parts.path}"
    return text


class OllamaEmbedder(HttpEmbedder):
    """``ollama:MODEL`` against an Ollama server (no key)."""

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        settings: HttpSettings | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.model = model
        self.base_url = ollama_base_url(host)
        super().__init__(
            f"ollama:{model}", f"ollama:{model}", secret=None, settings=settings, sleep=sleep
        )

    def url(self) -> str:
        return f"{self.base_url}/api/embed"

    def headers(self) -> dict[str, str]:
        return {}

    def body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def vectors(self, payload: Any, count: int) -> list[Any]:
        found = payload["embeddings"]
        if not isinstance(found, list) or len(found) != count:
            raise ValueError(f"expected {count} items in 'embeddings'")
        return found
