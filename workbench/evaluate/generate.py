"""A first case set in a minute: ask a chat model for realistic user messages that need each tool.

``holo-tune cases generate`` (:mod:`workbench.commands.cases`) calls :func:`generate_cases`. For
each tool the model is asked for N messages in varied styles (a precise request, a paraphrase
that avoids the tool's own words, a vague or multi-step one) as JSON ``{"queries": [...]}``.

- The model is asked through :mod:`workbench.evaluate.chat` (OpenAI, Azure OpenAI, Ollama over
  httpx; bounded parallel requests, backoff on 429/5xx, one line and exit 2 on 401/403/404, a
  bad answer asked again once then the tool reported and skipped, a disk cache).
- What is sent: the instructions of this module and the tool's name, server, description and
  parameter names. Never an environment value, a key (other than in the auth header) or the
  agent's own instructions.
- Answers are cached on disk (key: model, :data:`PROMPT_VERSION`, the hash of the tool's prompt,
  the seed): a re-run sends nothing.
- Exact and near duplicates (same words, or word sets at least :data:`NEAR` alike) are dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.catalog.models import Tool
from workbench.evaluate.chat import (
    DEFAULT_CONCURRENCY,
    AnswerCache,
    BadAnswer,
    ChatEndpoint,
    Progress,
    Prompt,
    ask_all,
)
from workbench.evaluate.chat import default_cache_dir as chat_cache_dir
from workbench.search.embedders.http import RetryPolicy

#: Bump when the prompt changes: cached answers of an older prompt are not reused.
PROMPT_VERSION = 1
DEFAULT_PER_TOOL = 3
#: Word-set (Jaccard) similarity at or above which two queries are near duplicates.
NEAR = 0.8
#: Longest description sent (characters) and longest query kept.
DESCRIPTION_LIMIT = 1500
QUERY_LIMIT = 300

SYSTEM = (
    "You write test data for a tool-search system. Given one tool an AI assistant can call, "
    "write messages a real user would type to the assistant that need that tool. Reply with a "
    'JSON object {"queries": [string, ...]} and nothing else.'
)


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
    return chat_cache_dir("generated-cases", environ)


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
    (also against ``existing`` queries). Raises ``ChatError`` when the run cannot go on."""

    def parse(text: str) -> dict[str, list[str]]:
        return {"queries": validate(text, per_tool)}

    asked = ask_all(
        [Prompt(messages_for(tool, per_tool), parse) for tool in tools],
        endpoint,
        version=PROMPT_VERSION,
        seed=seed,
        cache=cache,
        concurrency=concurrency,
        timeout=timeout,
        retry=retry,
        on_progress=on_progress,
    )
    pairs: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    for tool, answer in zip(tools, asked.answers, strict=True):
        if isinstance(answer, str):
            skipped.append((tool.full_name, answer))
        else:
            pairs += [(query, tool.full_name) for query in answer["queries"]]
    kept, dropped = drop_duplicates(pairs, existing)
    return GenerateReport(kept, skipped, asked.requests, asked.cached, dropped)
