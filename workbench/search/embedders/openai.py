"""OpenAI's embeddings API (``POST {base}/embeddings``), as HoloDeck's OpenAI service calls it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from workbench.search.embedders.http import HttpEmbedder, HttpSettings

#: The OpenAI SDK's default base URL; ``OPENAI_BASE_URL`` replaces it (the SDK reads the same).
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIEmbedder(HttpEmbedder):
    """``openai:MODEL``: bearer-key requests to an OpenAI-compatible ``/embeddings`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        settings: HttpSettings | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        model_id = f"openai:{model}"
        if self.base_url != DEFAULT_BASE_URL:
            # Another server may serve another model under the same name: keep the spaces apart.
            model_id += f"@{urlsplit(self.base_url).netloc}"
        super().__init__(
            f"openai:{model}", model_id, secret=api_key, settings=settings, sleep=sleep
        )

    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._secret}"}

    def body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "encoding_format": "float"}

    def vectors(self, payload: Any, count: int) -> list[Any]:
        return openai_vectors(payload, count)


def openai_vectors(payload: Any, count: int) -> list[Any]:
    """The vectors of an OpenAI-shaped answer (``data[].embedding``), put back in input order."""
    data = payload["data"]
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"expected {count} items in 'data'")
    ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
    return [item["embedding"] for item in ordered]
