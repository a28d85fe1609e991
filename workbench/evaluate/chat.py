"""A chat model over HTTP, for the features that ask one: ``cases generate`` (queries for each
tool) and ``--llm`` (the search call a model would write for each case).

- Providers: the OpenAI, Azure OpenAI and Ollama chat APIs over httpx (``OPENAI_BASE_URL`` and
  ``OPENAI_API_KEY`` for any OpenAI-compatible server); ``response_format: json_object`` where the
  provider has it (Ollama: ``format: json``). Keys and endpoints come from the agent's ``model``
  entry of the same provider, else the providers' variables.
- :func:`ask_all` asks many prompts in parallel, at most ``concurrency`` at a time; a 429 or 5xx
  (or a timeout, or a refused connection) is retried with exponential backoff (honouring
  ``Retry-After``); a 401/403/404, a server that cannot be reached or one that never answers
  stops the run with one line (:class:`ChatError`, exit 2). Any other error status, or a body
  that is not JSON, is reported for that prompt (with the server's own reason). An answer the
  caller's ``parse`` rejects (:class:`BadAnswer`) is asked again once, then reported for that
  prompt.
- Answers are cached on disk (:class:`AnswerCache`; key: model, the caller's prompt version, the
  hash of the messages, the seed): a re-run sends nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from workbench.errors import InputError
from workbench.search.embedders.http import RETRY_STATUSES, RetryPolicy, redact, server_delay

PROVIDERS = ("openai", "azure_openai", "ollama")
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_AZURE_VERSION = "2024-10-21"
DEFAULT_CONCURRENCY = 8
#: Statuses that end the run: the key, the access or the model is wrong for every prompt alike.
FATAL_STATUSES = frozenset({401, 403, 404})
_HINTS = {401: "check the API key", 403: "the key may lack access", 404: "check the {} name"}

Messages = list[dict[str, str]]
Progress = Callable[[int, int], None]
#: What a caller makes of the model's text: a JSON-able value (raise BadAnswer to ask again).
Parse = Callable[[str], Any]


class ChatError(InputError):
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

    def hint(self, status: int) -> str:
        """What to check after a fatal ``status`` (Azure names a deployment, not a model)."""
        return _HINTS[status].format("deployment" if self.kind == "azure_openai" else "model")

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


# ------------------------------------------------------------------------------------------ cache


def default_cache_dir(kind: str, environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/holo-tune/KIND`` (``~/.cache`` when unset)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "holo-tune" / kind


def cache_key(model_id: str, version: int, messages: Messages, seed: int) -> str:
    text_hash = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    key = json.dumps([model_id, version, text_hash, seed])
    return hashlib.sha256(key.encode()).hexdigest()


class AnswerCache:
    """One small JSON file per parsed answer (written atomically), under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: Any) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written costs a request next time, nothing more


# ------------------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Prompt:
    """One question: the messages, and what makes an answer usable."""

    messages: Messages
    parse: Parse


@dataclass
class Asked:
    """What :func:`ask_all` got: per prompt the parsed answer or why there is none (a string),
    and what it cost."""

    answers: list[Any]
    requests: int = 0
    cached: int = 0


@dataclass
class _State:
    requests: int = 0
    cached: int = 0
    done: int = 0
    fatal: ChatError | None = None


def ask_all(
    prompts: Sequence[Prompt],
    endpoint: ChatEndpoint,
    *,
    version: int,
    seed: int = 0,
    cache: AnswerCache | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = 60.0,
    retry: RetryPolicy | None = None,
    on_progress: Progress | None = None,
) -> Asked:
    """Ask every prompt (in parallel, bounded); answers in prompt order. ``version`` is the
    caller's prompt version (part of the cache key). Raises ChatError when the run cannot go on."""
    return asyncio.run(
        _run(
            prompts,
            endpoint,
            version=version,
            seed=seed,
            cache=cache,
            concurrency=max(1, concurrency),
            timeout=timeout,
            retry=retry or RetryPolicy(max_retries=4, base_delay=0.5, max_delay=8.0),
            on_progress=on_progress,
        )
    )


async def _run(
    prompts: Sequence[Prompt],
    endpoint: ChatEndpoint,
    *,
    version: int,
    seed: int,
    cache: AnswerCache | None,
    concurrency: int,
    timeout: float,
    retry: RetryPolicy,
    on_progress: Progress | None,
) -> Asked:
    state = _State()
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client_timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
    async with httpx.AsyncClient(timeout=client_timeout, limits=limits) as client:

        async def one(prompt: Prompt) -> Any:
            try:
                async with gate:
                    if state.fatal is not None:
                        return "not asked: the run stopped"
                    return await _ask(client, endpoint, prompt, version, seed, cache, retry, state)
            finally:
                state.done += 1
                if on_progress is not None:
                    on_progress(state.done, len(prompts))

        answers = await asyncio.gather(*(one(p) for p in prompts))
    if state.fatal is not None:
        raise state.fatal
    return Asked(list(answers), state.requests, state.cached)


async def _ask(
    client: httpx.AsyncClient,
    endpoint: ChatEndpoint,
    prompt: Prompt,
    version: int,
    seed: int,
    cache: AnswerCache | None,
    retry: RetryPolicy,
    state: _State,
) -> Any:
    """The prompt's parsed answer, or why there is none (a string)."""
    key = cache_key(endpoint.model_id, version, prompt.messages, seed)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            try:
                value = prompt.parse(json.dumps(hit))
            except BadAnswer:
                pass  # an entry this version cannot read: ask again
            else:
                state.cached += 1
                return value
    problem = ""
    body = endpoint.body(prompt.messages, seed)
    for _ in range(2):  # a bad answer is asked again once
        payload = await _post(client, endpoint, body, retry, state)
        if isinstance(payload, str):
            return payload
        try:
            value = prompt.parse(endpoint.content(payload))
        except BadAnswer as err:
            problem = str(err)
            continue
        if cache is not None:
            cache.put(key, value)
        return value
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
                stop = _unreachable(err, endpoint, client.timeout.read, attempt + 1)
                state.fatal = state.fatal or stop
                reason = "timed out" if isinstance(err, httpx.TimeoutException) else "no answer"
                return f"{reason} from {where}"
            await asyncio.sleep(retry.delay(attempt))
            continue
        status = response.status_code
        if status in RETRY_STATUSES and not last:
            await asyncio.sleep(retry.delay(attempt, server_delay(response.headers)))
            continue
        if status >= 400:
            detail = redact(_detail(response), endpoint.secret)
            said = f"HTTP {status} from {where}" + (f": {detail}" if detail else "")
            if status in FATAL_STATUSES:
                state.fatal = ChatError(f"{endpoint.spec}: {said} ({endpoint.hint(status)})")
            return said
        try:
            return response.json()
        except ValueError:
            return f"an answer that is not JSON from {where}"
    raise AssertionError("unreachable: the last attempt returns")


def _unreachable(
    err: httpx.HTTPError, endpoint: ChatEndpoint, timeout: float | None, tries: int
) -> ChatError | None:
    """Why the run stops after the last try failed with ``err`` (None: only this prompt failed).
    No connection, or no answer in time, would be the same for every other prompt."""
    where = endpoint.where()
    if isinstance(err, httpx.ConnectError | httpx.ConnectTimeout):
        return ChatError(f"{endpoint.spec}: cannot reach {where}")
    if isinstance(err, httpx.TimeoutException):
        times = "once" if tries == 1 else f"{tries} times"
        return ChatError(
            f"{endpoint.spec}: no answer from {where} within {timeout or 0:g} s (tried {times})"
        )
    return None


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
