"""The search query the model would write (``--llm SPEC`` on the deferred-loading runtimes).

A provider's tool search never sees the user's message: the model reads it and calls the search
tool with a query of its own (keywords for BM25, a regular expression for Anthropic's regex
variant). Searching the message itself flatters nothing and misleads the regex variant most: a
sentence is a pattern that matches almost no tool text. With a chat model
(:mod:`workbench.evaluate.chat`), each case's message is sent with the search tool's description
and the model answers with the calls it would make, ``{"bm25": "keywords", "regex": "pattern"}``;
those are what the engine then searches.

- What is sent: the instructions of this module and the case's message; nothing of the agent
  (no tool, no key, no environment value).
- The answers are cached on disk (key: model, :data:`PROMPT_VERSION`, the message, the seed), so
  a re-run sends nothing.
- Validation: both fields must be strings (else the message is asked again once, then the case
  falls back to its message, with a note). A regex that does not compile, or is longer than the
  documented 200 characters, or is empty, falls back to the model's keywords as an alternation
  (``(?i)(?:word|word)``), with a note: the run goes on and says what it replaced.

Without ``--llm`` every search is the message itself (:data:`MESSAGE`), and the figures say so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.evaluate.chat import (
    AnswerCache,
    BadAnswer,
    ChatEndpoint,
    Messages,
    Progress,
    Prompt,
    ask_all,
    default_cache_dir,
)
from workbench.search.strategies.anthropic import PATTERN_MAX

#: Bump when the prompt changes: cached answers of an older prompt are not reused.
PROMPT_VERSION = 1
#: Longest keyword query kept (characters).
KEYWORDS_MAX = 300
CACHE_KIND = "search-queries"

SYSTEM = (
    "You are an AI assistant whose tools are deferred: you see none of them until you call the "
    "tool search tool, which searches every tool's name, description and argument names and "
    "returns the few best matches. Given the user's message, write the search you would make to "
    'find the tools you need. Reply with a JSON object {"bm25": string, "regex": string} and '
    "nothing else."
)


def prompt_text(message: str) -> str:
    return (
        f"User message: {message}\n\n"
        "Write the search call you would make before answering it, in both forms:\n"
        '- "bm25": a few keywords for a BM25 search (not a sentence);\n'
        '- "regex": one Python regular expression (re.search) matched against each tool\'s name, '
        f"description and argument names, at most {PATTERN_MAX} characters (use (?i) to ignore "
        "case).\n"
        'Answer with JSON: {"bm25": "...", "regex": "..."}.'
    )


def messages_for(message: str) -> Messages:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt_text(message)},
    ]


def parse_answer(text: str) -> dict[str, str]:
    """``{"bm25": str, "regex": str}`` from the model's text (BadAnswer otherwise); the keywords
    are cleaned and bounded, the pattern is kept as written (it is checked when used)."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        raise BadAnswer("the answer is not JSON") from None
    if not isinstance(payload, dict):
        raise BadAnswer("the answer is not a JSON object")
    bm25, regex = payload.get("bm25"), payload.get("regex")
    if not isinstance(bm25, str) or not isinstance(regex, str):
        raise BadAnswer('the answer lacks "bm25" and "regex" strings')
    keywords = " ".join(bm25.split())[:KEYWORDS_MAX]
    if not keywords:
        raise BadAnswer('"bm25" is empty')
    return {"bm25": keywords, "regex": regex}


def pattern_problem(pattern: str) -> str | None:
    """Why the regex variant cannot search ``pattern`` (None: it can)."""
    if not pattern.strip():
        return "is empty"
    if len(pattern) > PATTERN_MAX:
        return f"is {len(pattern)} characters long (the limit is {PATTERN_MAX})"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as err:
        return f"does not compile ({err})"
    return None


def keyword_pattern(keywords: str) -> str:
    """The keywords as a case-insensitive alternation within the pattern limit."""
    words = list(dict.fromkeys(w for w in re.findall(r"\w+", keywords) if len(w) > 1))
    while words:
        pattern = "(?i)(?:" + "|".join(re.escape(w) for w in words) + ")"
        if len(pattern) <= PATTERN_MAX:
            return pattern
        words.pop()
    return re.escape(keywords[: PATTERN_MAX // 2])


@dataclass(frozen=True)
class SearchCall:
    """The queries one case is searched with, per variant."""

    bm25: str
    regex: str

    def query(self, variant: str) -> str:
        """The pattern for the regex variant, the keywords for any other search."""
        return self.regex if variant == "regex" else self.bm25


@dataclass(frozen=True)
class SearchQueries:
    """What each case's message is searched as. ``llm`` None: the message itself."""

    calls: Mapping[str, SearchCall] = field(default_factory=dict)
    llm: str | None = None
    notes: tuple[str, ...] = ()
    requests: int = 0
    cached: int = 0

    def query(self, message: str, variant: str) -> str:
        call = self.calls.get(message)
        return message if call is None else call.query(variant)

    def call(self, message: str) -> SearchCall | None:
        return self.calls.get(message)

    def searched(self) -> str:
        """What each case is searched with, in the words every figures' note ends with."""
        if self.llm is None:
            return "the user's message is searched (a model writes its own query)"
        return f"searched with the query {self.llm} writes for each case"

    def describe(self) -> str:
        """One line for the text output."""
        if self.llm is None:
            return (
                "the user's message itself is searched (a model writes its own query: --llm SPEC "
                "asks one for each case)"
            )
        fell = f", {len(self.notes)} fallback(s)" if self.notes else ""
        return (
            f"the search call {self.llm} would write for each case ({len(self.calls)} cases; "
            f"{self.requests} requests, {self.cached} from the cache{fell})"
        )

    def to_json(self) -> dict[str, Any]:
        """``search_query`` of the deferred runtimes' ``--json``."""
        if self.llm is None:
            return {"source": "message"}
        return {
            "source": "llm",
            "llm": self.llm,
            "prompt_version": PROMPT_VERSION,
            "cases": len(self.calls),
            "requests": self.requests,
            "cached": self.cached,
            "notes": list(self.notes),
        }


#: No model: every case is searched with its own message.
MESSAGE = SearchQueries()


def write_search_queries(
    messages: Sequence[str],
    endpoint: ChatEndpoint,
    *,
    cache: AnswerCache | None = None,
    seed: int = 0,
    on_progress: Progress | None = None,
    **ask: Any,
) -> SearchQueries:
    """Ask ``endpoint`` for the search call of each distinct message; validate each answer (a bad
    pattern falls back to the keywords, a bad answer to the message, each with a note)."""
    distinct = list(dict.fromkeys(messages))
    asked = ask_all(
        [Prompt(messages_for(m), parse_answer) for m in distinct],
        endpoint,
        version=PROMPT_VERSION,
        seed=seed,
        cache=cache,
        on_progress=on_progress,
        **ask,
    )
    calls: dict[str, SearchCall] = {}
    notes: list[str] = []
    for message, answer in zip(distinct, asked.answers, strict=True):
        if isinstance(answer, str):
            notes.append(f"{message!r}: no usable answer ({answer}); its message is searched")
            calls[message] = SearchCall(message, message)
            continue
        keywords, pattern = answer["bm25"], answer["regex"]
        problem = pattern_problem(pattern)
        if problem is not None:
            replacement = keyword_pattern(keywords)
            notes.append(
                f"{message!r}: the regex {pattern[:60]!r} {problem}; searched {replacement!r} "
                "(its keywords) instead"
            )
            pattern = replacement
        calls[message] = SearchCall(keywords, pattern)
    return SearchQueries(calls, endpoint.spec, tuple(notes), asked.requests, asked.cached)


def default_cache(environ: Mapping[str, str] | None = None) -> AnswerCache:
    """``$XDG_CACHE_HOME/holo-tune/search-queries``."""
    return AnswerCache(default_cache_dir(CACHE_KIND, environ))
