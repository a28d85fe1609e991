"""Azure OpenAI's embeddings API, addressed by deployment as HoloDeck's Azure service does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

from workbench.search.embedders.http import HttpEmbedder, HttpSettings
from workbench.search.embedders.openai import openai_vectors

#: HoloDeck 0.6.40's ``AZURE_OPENAI_DEFAULT_API_VERSION`` (used when the model sets none).
DEFAULT_API_VERSION = "2024-10-21"


class AzureOpenAIEmbedder(HttpEmbedder):
    """``azure_openai:DEPLOYMENT``: ``{endpoint}/openai/deployments/{deployment}/embeddings``."""

    def __init__(
        self,
        deployment: str,
        *,
        endpoint: str,
        api_key: str,
        api_version: str | None = None,
        settings: HttpSettings | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.deployment = deployment
        self.endpoint = endpoint.rstrip("/")
        self.api_version = api_version or DEFAULT_API_VERSION
        # A deployment name means something only on its resource: the host is part of the space.
        model_id = f"azure_openai:{deployment}@{urlsplit(self.endpoint).netloc}"
        super().__init__(
            f"azure_openai:{deployment}", model_id, secret=api_key, settings=settings, sleep=sleep
        )

    def url(self) -> str:
        name = quote(self.deployment, safe="")
        version = quote(self.api_version, safe="")
        return f"{self.endpoint}/openai/deployments/{name}/embeddings?api-version={version}"

    def headers(self) -> dict[str, str]:
        return {"api-key": self._secret or ""}

    def body(self, texts: list[str]) -> dict[str, Any]:
        return {"input": texts, "encoding_format": "float"}

    def vectors(self, payload: Any, count: int) -> list[Any]:
        return openai_vectors(payload, count)
