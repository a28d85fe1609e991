"""Which embedder scores semantic and hybrid: the user's choice, or what the runtime would use.

HoloDeck 0.6.40 (``holodeck.lib.tool_initializer`` and ``lib/test_runner/agent_factory.py``)
creates an embedding service only when the agent has a ``vectorstore`` or
``hierarchical_document`` tool. Its provider is the model's, except that an ``anthropic`` model
takes ``embedding_provider`` (and the agent does not start without one); the credentials come
from that same entry. The model is the tools' ``embedding_model`` (all explicit values must agree,
or the agent does not start), else ``nomic-embed-text:latest`` for Ollama and
``text-embedding-3-small`` otherwise (for Azure, a deployment of that name). Without a service,
the tool filter's semantic and hybrid searches are BM25: the choice says so loudly.

Priority: ``--embedder`` > ``HOLO_TUNE_EMBEDDER`` > the runtime's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from workbench.config.envsubst import PLACEHOLDER
from workbench.errors import InputError
from workbench.search.embedders.azure import AzureOpenAIEmbedder
from workbench.search.embedders.base import ENV_VAR, FLAG, NONE, EmbedderSpec, parse_spec
from workbench.search.embedders.cache import CachingEmbedder, ToolEmbeddingCache
from workbench.search.embedders.local import LocalEmbedder
from workbench.search.embedders.ollama import OllamaEmbedder
from workbench.search.embedders.openai import OpenAIEmbedder
from workbench.search.types import Embedder

if TYPE_CHECKING:
    from workbench.config import AgentConfig
    from workbench.config.models import Agent, LLMProvider

#: Tool types that make HoloDeck create an embedding service.
EMBEDDING_TOOL_TYPES = ("vectorstore", "hierarchical_document")
#: HoloDeck's default embedding models per provider.
DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text:latest"
BM25_AT_RUN_TIME = "HoloDeck's semantic and hybrid are BM25"
#: A small local model to suggest when the runtime's embedder cannot be reached from here.
LOCAL_HINT = "local:all-MiniLM-L6-v2"
#: The loader's stand-in for an unset ``${VAR}`` (when asked to warn rather than fail).
_UNSET = re.compile(re.escape(PLACEHOLDER.format(name="")) + r"([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class EmbedderChoice:
    """The embedder holo-tune scores with, and how it relates to the runtime's.

    ``spec`` is what is used (``none`` when there is no embedder); ``runtime`` is what HoloDeck
    would use at run time (``none`` when it has no embedding service); ``note`` is the warning the
    UI shows next to semantic/hybrid scores; ``explicit`` is True when the user chose (flag or
    environment) rather than holo-tune following the runtime. ``cache`` is where tool vectors
    are kept between runs (pass it to the engine; None when there is no embedder).
    """

    embedder: Embedder | None
    spec: str
    model_id: str | None
    runtime: str
    note: str | None = None
    explicit: bool = False
    cache: ToolEmbeddingCache | None = None
    #: What the runtime's embedder lacks here (``OPENAI_API_KEY``), when that is why there is none.
    missing: str | None = None

    @property
    def matches_runtime(self) -> bool:
        """True when the scores come from the embedding model the runtime would use."""
        return self.spec == self.runtime

    @property
    def runtime_fallback(self) -> bool:
        """True when HoloDeck itself has no embedding service: its semantic and hybrid are BM25."""
        return self.runtime == str(NONE)

    @property
    def serve_note(self) -> str | None:
        """What holo-tune's own engine (serve, the serve runtime) says of this choice: it embeds
        with the chosen model itself, so nothing of HoloDeck's embedding applies (:attr:`note`
        is HoloDeck's); only a dense signal the user did not turn off and cannot have is worth a
        line: the runtime's model without its credentials, or no model at all."""
        if self.embedder is not None or self.explicit:  # explicit and none: the user's choice
            return None
        if self.missing:
            return (
                f"no dense signal: {self.runtime} needs {self.missing} (set it, or pass "
                f"--embedder {LOCAL_HINT} to embed on this machine)"
            )
        return f"no dense signal: no embedder (pass --embedder {LOCAL_HINT})"

    def bm25_reason(self) -> str:
        """Why semantic and hybrid are BM25 here, in one clause: the runtime's own fallback, or
        no embedder in holo-tune while HoloDeck does embed (with what to do about it)."""
        if self.runtime_fallback:
            return "the runtime's fallback (HoloDeck has no embedding service for this agent)"
        if self.missing:
            why = f"holo-tune cannot embed here without {self.missing}"
            todo = f"set {self.missing} or pass --embedder {LOCAL_HINT}"
        else:
            why = "embeddings are off here"
            todo = f"pass --embedder {LOCAL_HINT} or the runtime's {self.runtime}"
        return (
            f"{why}, but HoloDeck embeds with {self.runtime} at run time; {todo} "
            f"(a threshold tuned with another model does not transfer to {self.runtime})"
        )


@dataclass(frozen=True)
class RuntimeEmbedding:
    """What HoloDeck 0.6.40 would embed with for an agent: a spec and whose credentials.

    ``spec`` is ``none`` when there is no embedding service; ``reason`` then says why.
    """

    spec: EmbedderSpec
    settings: LLMProvider | None = None
    reason: str | None = None


def runtime_embedding(agent: Agent) -> RuntimeEmbedding:
    """The runtime's embedding service for ``agent``, by HoloDeck 0.6.40's rules (module doc)."""
    tools = [t for t in agent.tools or () if t.type in EMBEDDING_TOOL_TYPES]
    if not tools:
        return RuntimeEmbedding(
            NONE,
            reason=(
                "no embedding service at run time (no vectorstore or hierarchical_document "
                f"tool): {BM25_AT_RUN_TIME}"
            ),
        )
    settings: LLMProvider = agent.model
    if agent.model.provider == "anthropic":
        if agent.embedding_provider is None:
            return RuntimeEmbedding(
                NONE,
                reason=(
                    "HoloDeck would not start this agent: an anthropic model with vectorstore "
                    "tools needs embedding_provider"
                ),
            )
        settings = agent.embedding_provider
    provider = settings.provider
    if provider not in ("openai", "azure_openai", "ollama"):
        return RuntimeEmbedding(
            NONE,
            reason=f"HoloDeck would not start this agent: {provider} has no embedding service",
        )
    explicit = {t.name: model for t in tools if (model := getattr(t, "embedding_model", None))}
    if len(set(explicit.values())) > 1:
        found = ", ".join(f"{name}={model}" for name, model in sorted(explicit.items()))
        return RuntimeEmbedding(
            NONE,
            reason=f"HoloDeck would not start this agent: conflicting embedding_model ({found})",
        )
    default = DEFAULT_OLLAMA_MODEL if provider == "ollama" else DEFAULT_MODEL
    model = next(iter(explicit.values()), default)
    return RuntimeEmbedding(EmbedderSpec(provider, model), settings=settings)


class MissingCredentials(InputError):
    """An HTTP embedder lacks its key or endpoint (names the variables that would give them)."""


def build_embedder(
    spec: str | EmbedderSpec,
    *,
    agent: Agent | None = None,
    settings: LLMProvider | None = None,
    environ: Mapping[str, str] | None = None,
    source: str = FLAG,
) -> Embedder | None:
    """An embedder for ``spec`` (None for ``none``), with credentials as the runtime finds them.

    Credentials come from ``settings`` if given, else from the agent's model or
    ``embedding_provider`` entry of the same provider, else from the environment (the variables
    the providers' SDKs read). Raises InputError (MissingCredentials) naming ``source``.
    """
    env = os.environ if environ is None else environ
    parsed = spec if isinstance(spec, EmbedderSpec) else parse_spec(spec, source=source)
    if parsed.kind == "none" or parsed.model is None:
        return None
    if parsed.kind == "local":
        return LocalEmbedder(parsed.model, source=source)
    entry = settings if settings is not None else _entry_for(parsed.kind, agent)
    key = _secret(entry)
    endpoint = entry.endpoint if entry else None
    if parsed.kind == "openai":
        api_key = _needed(parsed, source, env, (key, "OPENAI_API_KEY"))[0]
        # The OpenAI SDK the runtime uses reads OPENAI_BASE_URL; HoloDeck passes no endpoint.
        return OpenAIEmbedder(parsed.model, api_key=api_key, base_url=env.get("OPENAI_BASE_URL"))
    if parsed.kind == "azure_openai":
        url, api_key = _needed(
            parsed,
            source,
            env,
            (endpoint, "AZURE_OPENAI_ENDPOINT"),
            (key, "AZURE_OPENAI_API_KEY"),
        )
        version = entry.api_version if entry else env.get("AZURE_OPENAI_API_VERSION")
        return AzureOpenAIEmbedder(parsed.model, endpoint=url, api_key=api_key, api_version=version)
    host = _given(endpoint)[0] or env.get("OLLAMA_HOST")
    return OllamaEmbedder(parsed.model, host=host)


def _needed(
    spec: EmbedderSpec, source: str, env: Mapping[str, str], *wanted: tuple[str | None, str]
) -> list[str]:
    """Each value from the agent file, else its environment variable; MissingCredentials naming
    every variable still lacking (the file's own ``${VAR}`` when that one is unset)."""
    values: list[str] = []
    lacking: list[str] = []
    for given, variable in wanted:
        value, unset = _given(given)
        if value is None and unset is None:
            value = env.get(variable) or None
        if value is None:
            lacking.append(unset or variable)
        else:
            values.append(value)
    if lacking:
        raise MissingCredentials(f"{spec} needs {' and '.join(lacking)}", field=source)
    return values


def _given(value: str | None) -> tuple[str | None, str | None]:
    """A value from the agent file, or (None, VAR) when it holds the loader's stand-in for an
    unset ``${VAR}`` (``load_agent(missing_env="warn")``), or (None, None) when it is empty."""
    if not value:
        return None, None
    unset = _UNSET.search(value)
    if unset:
        return None, unset.group(1)
    return value, None


def resolve_embedder(
    agent: AgentConfig, spec: str | None, *, environ: Mapping[str, str] | None = None
) -> EmbedderChoice:
    """The embedder to score with: ``spec`` (``--embedder``), else ``HOLO_TUNE_EMBEDDER``, else
    the runtime's; the returned embedder remembers query vectors (an in-memory LRU)."""
    # The runtime also reads the agent's .env files (names the environment lacks): so do we.
    env = {**agent.env, **(os.environ if environ is None else environ)}
    runtime = runtime_embedding(agent.agent)
    chosen, source = _user_choice(spec, env)
    if chosen is None:
        choice = _follow_runtime(agent.agent, runtime, env)
    else:
        embedder = build_embedder(chosen, agent=agent.agent, environ=env, source=source)
        note = _explicit_note(chosen, runtime, source)
        choice = _choice(embedder, runtime, note=note, explicit=True)
    if choice.embedder is None:
        return choice
    return replace(choice, cache=ToolEmbeddingCache.default(env))


def _user_choice(spec: str | None, env: Mapping[str, str]) -> tuple[EmbedderSpec | None, str]:
    if spec is not None and spec.strip():
        return parse_spec(spec, source=FLAG), FLAG
    from_env = env.get(ENV_VAR, "").strip()
    if from_env:
        return parse_spec(from_env, source=ENV_VAR), ENV_VAR
    return None, FLAG


def _follow_runtime(
    agent: Agent, runtime: RuntimeEmbedding, env: Mapping[str, str]
) -> EmbedderChoice:
    if runtime.spec == NONE:
        return _choice(None, runtime, note=runtime.reason)
    try:
        embedder = build_embedder(runtime.spec, agent=agent, settings=runtime.settings, environ=env)
    except MissingCredentials as err:
        note = (
            f"semantic scores need {_needs(err.message)} (HoloDeck embeds with {runtime.spec}): "
            "showing BM25 until it is set"
        )
        return replace(_choice(None, runtime, note=note), missing=_needs(err.message))
    return _choice(embedder, runtime)


def _needs(message: str) -> str:
    return message.split(" needs ", 1)[-1]


def _explicit_note(chosen: EmbedderSpec, runtime: RuntimeEmbedding, source: str) -> str | None:
    if chosen == runtime.spec:
        return None
    if chosen == NONE:
        return (
            f"embeddings off ({source} none): semantic and hybrid show BM25, but at run time "
            f"HoloDeck embeds with {runtime.spec}"
        )
    if runtime.spec == NONE:
        return f"scores from {chosen} ({source}), but {runtime.reason}"
    return (
        f"scores from {chosen} ({source}); at run time HoloDeck embeds with {runtime.spec}, "
        "and a threshold tuned on one model does not transfer to another"
    )


def _choice(
    embedder: Embedder | None,
    runtime: RuntimeEmbedding,
    *,
    note: str | None = None,
    explicit: bool = False,
) -> EmbedderChoice:
    if embedder is None:
        return EmbedderChoice(None, "none", None, str(runtime.spec), note, explicit)
    return EmbedderChoice(
        CachingEmbedder(embedder),
        embedder.spec,
        embedder.model_id,
        str(runtime.spec),
        note,
        explicit,
    )


def _entry_for(kind: str, agent: Agent | None) -> LLMProvider | None:
    """The agent's model or embedding_provider entry for ``kind``, the runtime's entry first."""
    if agent is None:
        return None
    runtime = runtime_embedding(agent).settings
    for entry in (runtime, agent.model, agent.embedding_provider):
        if entry is not None and entry.provider == kind:
            return entry
    return None


def _secret(entry: LLMProvider | None) -> str | None:
    if entry is None or entry.api_key is None:
        return None
    return entry.api_key.get_secret_value()
