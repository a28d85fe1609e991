"""A first case set in a minute: ask a chat model for realistic user messages that need each tool.

``holo-tune cases generate`` (:mod:`workbench.commands.cases`) calls :func:`generate_cases`. For
each tool the model is asked for N messages in varied styles (a precise request, a paraphrase
that avoids the tool's own words, a vague or multi-step one) as JSON ``{"queries": [...]}``.

- Providers: the OpenAI, Azure OpenAI and Ollama chat APIs over httpx (``OPENAI_BASE_URL`` and
  ``OPENAI_API_KEY`` for any OpenAI-compatible server); ``response_format: json_object`` where the
  provider has it (Ollama: ``format: json``).
- What is sent: the instructions of this module and the tool's name, server, description and
  parameter names. Never an environment value, a key (other than in the auth header) or the
  agent's own instructions.
- Requests run in parallel, at most ``concurrency`` at a time; a 429 or 5xx (or a timeout) is
  retried with exponential backoff (honouring ``Retry-After``); a 401/403/404 stops the run with
  one line (:class:`GenerateError`, exit 2).
- An answer that is not the JSON asked for is asked again once, then the tool is reported and
  skipped.
- Answers are cached on disk (key: model, :data:`PROMPT_VERSION`, the hash of the tool's prompt,
  the seed): a re-run sends nothing.
- Exact and near duplicates (same words, or word sets at least :data:`NEAR` alike) are dropped.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from workbench.catalog.models import Tool
from workbench.errors import InputError
from workbench.search.embedders.http import RETRY_STATUSES, RetryPolicy, redact, server_delay

#: Bump when the prompt changes: cached answers of an older prompt are not reused.
PROMPT_VERSION = 1
DEFAULT_PER_TOOL = 3
DEFAULT_CONCURRENCY = 8
#: Word-set (Jaccard) similarity at or above which two queries are near duplicates.
NEAR = 0.8
#: Longest description sent (characters) and longest query kept.
DESCRIPTION_LIMIT = 1500
QUERY_LIMIT = 300
PROVIDERS = ("openai", "azure_openai", "ollama")
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_AZURE_VERSION = "2024-10-21"
#: Statuses that end the run: the key, the access or the model is wrong for every tool alike.
FATAL_STATUSES = frozenset({401, 403, 404})
_HINTS = {401: "check the API key", 403: "the key may lack access", 404: "check the model name"}

SYSTEM = (
    "You write test data for a tool-search system. Given one tool an AI assistant can call, "
    "write messages a real user would type to the assistant that need that tool. Reply with a "
    'JSON object {"queries": [string, ...]} and nothing else.'
)

Progress = Callable[[int, int], None]


class GenerateError(InputError):
    """The run cannot go on (bad key, unknown model, unreachable server): one line, exit 2."""


class BadAnswer(ValueError):
    """The model's answer is not the JSON asked for."""


# ----------------------------------------------------------------------------------- endpoints


@dataclass(frozen=True)
class ChatEndpoint:
    """Where and how to ask one chat model (``headers`` carry the key: never print them)."""

    spec: str
    kind: str
    model: str
    url: str
    headers: Mapping[str, str] = field(repr=False)
    secret: str | None = field(default=None, repr=False)

    @property
    def model_id(self) -> str:
        """What the cache is keyed by: the model and where it runs."""
        return f"{self.spec}@{urlsplit(self.url).netloc}"

    def where(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}{parts.path}"

    def body(self, messages: list[dict[str, str]], seed: int) -> dict[str, Any]:
        if self.kind == "ollama":
            return {
                "model": self.model,
                "messages": messages,
                "stream": False,
                "format": "json",
                "options": {"seed": seed, "temperature": 0.8},
            }
        body: dict[str, Any] = {
            "messages": messages,
            "response_format": {"type": "json_object"},
            "temperature": 0.8,
            "seed": seed,
        }
        if self.kind == "openai":
            body["model"] = self.model
        return body

    def content(self, payload: Any) -> str:
        """The assistant's text in a chat answer (raise BadAnswer when absent)."""
        try:
            if self.kind == "ollama":
                text = payload["message"]["content"]
            else:
                text = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BadAnswer("no message in the answer") from None
        if not isinstance(text, str):
            raise BadAnswer("the message is not text")
        return text


def parse_llm(spec: str) -> tuple[str, str]:
    """``openai:MODEL``, ``azure_openai:DEPLOYMENT`` or ``ollama:MODEL`` -> (kind, model)."""
    kind, _, model = spec.partition(":")
    if kind not in PROVIDERS or not model.strip():
        raise InputError(
            f"expected openai:MODEL, azure_openai:DEPLOYMENT or ollama:MODEL, got {spec!r}",
            field="--llm",
        )
    return kind, model.strip()


def resolve_endpoint(
    spec: str | None, model: Any, environ: Mapping[str, str] | None = None
) -> ChatEndpoint:
    """The chat endpoint for ``--llm spec`` (default: the agent's ``model`` entry), with keys and
    endpoints from the agent's entry of the same provider, else the providers' variables."""
    from workbench.search.embedders.resolve import _given  # the loader's unset-variable marker

    env = os.environ if environ is None else environ
    source = "--llm"
    if spec is None:
        provider = getattr(model, "provider", None)
        if provider not in PROVIDERS:
            raise InputError(
                f"the agent's model provider {provider!r} has no chat API here: pass --llm "
                "openai:MODEL, azure_openai:DEPLOYMENT or ollama:MODEL",
                field="--llm",
            )
        spec = f"{provider}:{model.name}"
        source = "model"
    kind, name = parse_llm(spec)
    entry = model if getattr(model, "provider", None) == kind else None
    key = entry.api_key.get_secret_value() if entry is not None and entry.api_key else None
    endpoint = entry.endpoint if entry is not None else None

    def needed(given: str | None, variable: str) -> str:
        value, unset = _given(given)
        if value is None and unset is None:
            value = env.get(variable) or None
        if value is None:
            raise InputError(f"{spec} needs {unset or variable}", field=source)
        return value

    if kind == "openai":
        secret = needed(key, "OPENAI_API_KEY")
        base = (env.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_URL).rstrip("/")
        headers = {"Authorization": f"Bearer {secret}"}
        return ChatEndpoint(spec, kind, name, f"{base}/chat/completions", headers, secret)
    if kind == "azure_openai":
        url = needed(endpoint, "AZURE_OPENAI_ENDPOINT").rstrip("/")
        secret = needed(key, "AZURE_OPENAI_API_KEY")
        version = (entry.api_version if entry is not None else None) or env.get(
            "AZURE_OPENAI_API_VERSION", DEFAULT_AZURE_VERSION
        )
        full = (
            f"{url}/openai/deployments/{quote(name, safe='')}/chat/completions"
            f"?api-version={quote(version, safe='')}"
        )
        return ChatEndpoint(spec, kind, name, full, {"api-key": secret}, secret)
    host = _given(endpoint)[0] or env.get("OLLAMA_HOST") or DEFAULT_OLLAMA_URL
    if not host.startswith(("http://", "https://")):
        host = f"http://{host}"
    return ChatEndpoint(spec, kind, name, f"{host.rstrip('/')}/api/chat", {}, None)


# -------------------------------------------------------------------------------------- prompts


def tool_prompt(tool: Tool, per_tool: int) -> str:
    """The user message about one tool: its name, server, description and parameter names."""
    description = " ".join(tool.description.split())[:DESCRIPTION_LIMIT] or "(none)"
    params = ", ".join(tool.parameters) or "none"
    return (
        f"Tool: {tool.name}\nServer: {tool.plugin}\nDescription: {description}\n"
        f"Parameters: {params}\n\n"
        f"Write {per_tool} different messages a user would send to the assistant that need this "
        "tool. Vary the style: a precise request; a paraphrase that avoids the tool's own words; "
        "a vague or multi-step request. Each message stands alone, in the user's voice, at most "
        "30 words, and never names the tool. "
        f'Answer with JSON: {{"queries": [{per_tool} strings]}}.'
    )


def messages_for(tool: Tool, per_tool: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": tool_prompt(tool, per_tool)},
    ]


def validate(text: str, per_tool: int) -> list[str]:
    """The queries of an answer: JSON ``{"queries": [non-empty strings]}``, at most ``per_tool``
    kept (BadAnswer when there is none)."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        raise BadAnswer("the answer is not JSON") from None
    queries = payload.get("queries") if isinstance(payload, dict) else None
    if not isinstance(queries, list):
        raise BadAnswer('the answer has no "queries" list')
    kept: list[str] = []
    for query in queries:
        if not isinstance(query, str):
            raise BadAnswer('"queries" holds something other than strings')
        clean = " ".join(query.split())
        if clean and len(clean) <= QUERY_LIMIT and clean not in kept:
            kept.append(clean)
    if not kept:
        raise BadAnswer('"queries" holds no usable message')
    return kept[:per_tool]


# ------------------------------------------------------------------------------------------ cache


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/holo-tune/generated-cases`` (``~/.cache`` when unset)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "holo-tune" / "generated-cases"


def cache_key(model_id: str, messages: list[dict[str, str]], seed: int) -> str:
    text_hash = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    key = json.dumps([model_id, PROMPT_VERSION, text_hash, seed])
    return hashlib.sha256(key.encode()).hexdigest()


class AnswerCache:
    """One small JSON file per answer (written atomically), under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[str] | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        queries = data.get("queries") if isinstance(data, dict) else None
        if isinstance(queries, list) and queries and all(isinstance(q, str) for q in queries):
            return list(queries)
        return None

    def put(self, key: str, queries: list[str]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"queries": queries}, f, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written costs a request next time, nothing more


# ------------------------------------------------------------------------------------- duplicates

_WORD = re.compile(r"\w+", re.UNICODE)


def words(query: str) -> frozenset[str]:
    return frozenset(_WORD.findall(query.casefold()))


def near_duplicate(a: frozenset[str], b: frozenset[str], near: float = NEAR) -> bool:
    """Word sets alike enough (Jaccard >= ``near``) to be the same request."""
    if not a or not b:
        return a == b
    small, large = sorted((len(a), len(b)))
    if small < near * large:  # Jaccard <= small / large: cannot reach ``near``
        return False
    return len(a & b) >= near * len(a | b)


def drop_duplicates(
    cases: Sequence[tuple[str, str]], existing: Sequence[str] = ()
) -> tuple[list[tuple[str, str]], int]:
    """``cases`` (query, tool) without exact or near duplicates of an earlier query or of an
    ``existing`` one; and how many were dropped."""
    seen: list[frozenset[str]] = [words(q) for q in existing]
    exact: set[frozenset[str]] = set(seen)
    by_word: dict[str, list[int]] = {}
    for i, w in enumerate(seen):
        for word in w:
            by_word.setdefault(word, []).append(i)
    kept: list[tuple[str, str]] = []
    dropped = 0
    for query, tool in cases:
        w = words(query)
        candidates = {i for word in w for i in by_word.get(word, ())}
        if w in exact or any(near_duplicate(w, seen[i]) for i in candidates):
            dropped += 1
            continue
        exact.add(w)
        seen.append(w)
        for word in w:
            by_word.setdefault(word, []).append(len(seen) - 1)
        kept.append((query, tool))
    return kept, dropped


# ------------------------------------------------------------------------------------- the run


@dataclass
class GenerateReport:
    """What a run produced: (query, tool full name) pairs, and what it could not do."""

    cases: list[tuple[str, str]]
    skipped: list[tuple[str, str]]
    requests: int = 0
    cached: int = 0
    duplicates: int = 0


@dataclass
class _State:
    requests: int = 0
    cached: int = 0
    done: int = 0
    fatal: GenerateError | None = None


def generate_cases(
    tools: Sequence[Tool],
    endpoint: ChatEndpoint,
    *,
    per_tool: int = DEFAULT_PER_TOOL,
    seed: int = 0,
    cache: AnswerCache | None = None,
    existing: Sequence[str] = (),
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = 60.0,
    retry: RetryPolicy | None = None,
    on_progress: Progress | None = None,
) -> GenerateReport:
    """Ask ``endpoint`` for ``per_tool`` queries per tool; cases in tool order, deduplicated
    (also against ``existing`` queries). Raises GenerateError when the run cannot go on."""
    return asyncio.run(
        _run(
            tools,
            endpoint,
            per_tool=per_tool,
            seed=seed,
            cache=cache,
            existing=existing,
            concurrency=max(1, concurrency),
            timeout=timeout,
            retry=retry or RetryPolicy(max_retries=4, base_delay=0.5, max_delay=8.0),
            on_progress=on_progress,
        )
    )


async def _run(
    tools: Sequence[Tool],
    endpoint: ChatEndpoint,
    *,
    per_tool: int,
    seed: int,
    cache: AnswerCache | None,
    existing: Sequence[str],
    concurrency: int,
    timeout: float,
    retry: RetryPolicy,
    on_progress: Progress | None,
) -> GenerateReport:
    state = _State()
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client_timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
    async with httpx.AsyncClient(timeout=client_timeout, limits=limits) as client:

        async def one(tool: Tool) -> list[str] | str:
            try:
                async with gate:
                    if state.fatal is not None:
                        return "not asked: the run stopped"
                    return await _ask(client, endpoint, tool, per_tool, seed, cache, retry, state)
            finally:
                state.done += 1
                if on_progress is not None:
                    on_progress(state.done, len(tools))

        answers = await asyncio.gather(*(one(tool) for tool in tools))
    if state.fatal is not None:
        raise state.fatal
    pairs: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    for tool, answer in zip(tools, answers, strict=True):
        if isinstance(answer, str):
            skipped.append((tool.full_name, answer))
        else:
            pairs += [(query, tool.full_name) for query in answer]
    kept, dropped = drop_duplicates(pairs, existing)
    return GenerateReport(kept, skipped, state.requests, state.cached, dropped)


async def _ask(
    client: httpx.AsyncClient,
    endpoint: ChatEndpoint,
    tool: Tool,
    per_tool: int,
    seed: int,
    cache: AnswerCache | None,
    retry: RetryPolicy,
    state: _State,
) -> list[str] | str:
    """The tool's queries, or why there are none (a string)."""
    messages = messages_for(tool, per_tool)
    key = cache_key(endpoint.model_id, messages, seed)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            state.cached += 1
            return hit[:per_tool]
    problem = ""
    for _ in range(2):  # a bad answer is asked again once
        payload = await _post(client, endpoint, endpoint.body(messages, seed), retry, state)
        if isinstance(payload, str):
            return payload
        try:
            queries = validate(endpoint.content(payload), per_tool)
        except BadAnswer as err:
            problem = str(err)
            continue
        if cache is not None:
            cache.put(key, queries)
        return queries
    return f"{problem} (asked twice)"


async def _post(
    client: httpx.AsyncClient,
    endpoint: ChatEndpoint,
    body: dict[str, Any],
    retry: RetryPolicy,
    state: _State,
) -> Any:
    """The answer's JSON, or why there is none (a string); sets ``state.fatal`` on a status no
    other tool would get past."""
    where = endpoint.where()
    for attempt in range(retry.max_retries + 1):
        last = attempt == retry.max_retries
        state.requests += 1
        try:
            response = await client.post(endpoint.url, headers=dict(endpoint.headers), json=body)
        except httpx.HTTPError as err:
            if last:
                if isinstance(err, httpx.ConnectError):
                    state.fatal = GenerateError(f"{endpoint.spec}: cannot reach {where}")
                reason = "timed out" if isinstance(err, httpx.TimeoutException) else "no answer"
                return f"{reason} from {where}"
            await asyncio.sleep(retry.delay(attempt))
            continue
        status = response.status_code
        if status in RETRY_STATUSES and not last:
            await asyncio.sleep(retry.delay(attempt, server_delay(response.headers)))
            continue
        if status in FATAL_STATUSES:
            detail = redact(_detail(response), endpoint.secret)
            message = f"{endpoint.spec}: HTTP {status} from {where}"
            message += f": {detail}" if detail else ""
            state.fatal = GenerateError(f"{message} ({_HINTS[status]})")
            return message
        if status >= 400:
            return f"HTTP {status} from {where}"
        try:
            return response.json()
        except ValueError:
            return f"an answer that is not JSON from {where}"
    raise AssertionError("unreachable: the last attempt returns")


def _detail(response: httpx.Response, limit: int = 160) -> str:
    try:
        payload = response.json()
    except ValueError:
        return " ".join(response.text.split())[:limit]
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return " ".join(str(error["message"]).split())[:limit]
    if isinstance(error, str):
        return " ".join(error.split())[:limit]
    return ""
