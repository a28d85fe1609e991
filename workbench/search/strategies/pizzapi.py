"""``pizzapi``: PizzaPi's tool search extension, deferred MCP tools behind ``search_tools``.

Reproduces Pizzaface/PizzaPi ``packages/cli/src/extensions/tool-search.ts`` (with tool names as
``packages/cli/src/extensions/mcp/tool-naming.ts`` allocates them), tool search enabled:

- MCP tools are named ``mcp_<server>_<tool>`` (sanitised, lowercase, at most 64 characters with a
  hash suffix when longer or colliding); other tools are never deferred;
- every MCP tool's size is ``len(name) + len(description) + len(JSON.stringify(inputSchema))`` in
  UTF-16 units; when the total exceeds ``token_threshold`` (10,000 characters) all MCP tools are
  deferred, except servers whose ``deferLoading`` is false; servers with ``deferLoading`` true are
  deferred whatever the total;
- ``search_tools(query)`` scores each deferred tool: the lowercased query is split on white space
  and ``_-:.,;/\\|``, keywords of one character are dropped; per keyword, exact name +10, else name
  contains +5; description contains +3; a parameter name contains +1; then the whole query in the
  name +8, in the description +4. Tools scoring > 0, best first (stable), the first
  ``max_results`` (5) are loaded;
- ``keep_loaded_tools`` (true): loaded tools stay for the session; when false they are deferred
  again after each turn, at the end of the deferred list (which moves them last among ties).

Tokens: ``search_tools``'s schema and its prompt snippet and guidelines (always registered), every
tool not deferred, the loaded tools' definitions, and the text ``search_tools`` returns.
"""

from __future__ import annotations

import copy
import json
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from workbench.catalog.models import Catalog, Tool
from workbench.errors import InputError
from workbench.search.strategies.base import (
    StrategyResult,
    TokenBill,
    argument_texts,
    definitions_tokens,
    full_scores,
    request_tokens,
    source_description,
    text_tokens,
)
from workbench.search.strategies.registry import Engine, register
from workbench.search.types import BoolArray, FloatArray, IntArray

NAME_MAX = 64
#: The ``max_results`` values ``run_grid`` covers.
GRID_MAX_RESULTS: tuple[int, ...] = tuple(range(1, 11))
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")
_UNDERSCORES = re.compile(r"_+")
_KEYWORD_SPLIT = re.compile(r"[\s_\-:.,;/\\|]+")
_M32 = 0xFFFFFFFF

SEARCH_TOOLS: dict[str, Any] = {
    "name": "search_tools",
    "description": (
        "Search for available tools by keyword query. "
        "Some tools are deferred to save context space — use this to discover and load them. "
        "Returns matching tool names and descriptions. Matched tools are automatically loaded "
        "and become available for use in subsequent tool calls."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Search query — keywords describing the tool you need",
            }
        },
        "required": ["query"],
    },
}

#: What the extension adds to the system prompt for ``search_tools`` (snippet and guidelines).
PROMPT_TEXT = "\n".join(
    [
        "Search for and load deferred MCP tools by keyword. "
        "Use when you need a tool that isn't currently available.",
        "Use search_tools when you need to call a tool that isn't in your current tool list.",
        "Search with descriptive keywords about what you want to do (e.g., 'create github issue',"
        " 'send slack message').",
        "After search_tools returns results, the matched tools are loaded and ready to use.",
    ]
)


@dataclass(frozen=True)
class PizzaPiParams:
    """PizzaPi's ``toolSearch`` settings (defaults: PizzaPi's) and per-server ``deferLoading``."""

    #: Total characters of MCP tool definitions above which MCP tools are deferred.
    token_threshold: int = 10_000
    #: Tools ``search_tools`` loads per call.
    max_results: int = 5
    #: Loaded tools stay for the session (else they are deferred again after each turn).
    keep_loaded_tools: bool = True
    #: ``deferLoading`` per MCP server: true always defers it, false never does.
    defer_loading: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.token_threshold < 0:
            raise InputError("must be at least 0", field="token_threshold")
        if self.max_results < 1:
            raise InputError("must be at least 1", field="max_results")


# ------------------------------------------------------------------------------------ naming


def utf16_units(text: str) -> list[int]:
    """The UTF-16 code units of a string (what JavaScript's ``length``/``charCodeAt`` see)."""
    data = text.encode("utf-16-le", errors="surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def js_length(text: str) -> int:
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def short_hash(value: str) -> str:
    """PizzaPi's ``shortHash`` (two 32-bit multiplicative hashes, base 36)."""
    units = utf16_units(value)
    h1 = 0xDEADBEEF ^ len(units)
    h2 = 0x41C6CE57 ^ len(units)
    for ch in units:
        h1 = ((h1 ^ ch) * 2654435761) & _M32
        h2 = ((h2 ^ ch) * 1597334677) & _M32
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & _M32) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & _M32)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & _M32) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & _M32)
    return _base36(h1) + _base36(h2)


def sanitize_part(value: str) -> str:
    cleaned = _UNDERSCORES.sub("_", _UNSAFE.sub("_", value.strip())).strip("_")
    return cleaned or "tool"


def clamp_name(name: str, seed: str) -> str:
    if len(name) <= NAME_MAX:
        return name
    digest = short_hash(seed)[:8]
    keep = max(1, NAME_MAX - len(digest) - 1)
    return f"{name[:keep]}_{digest}"


def allocate_name(server: str, tool: str, used: set[str]) -> str:
    """PizzaPi's provider-safe, collision-free ``mcp_<server>_<tool>`` name, added to ``used``."""
    source = f"{server}:{tool}"
    base = f"mcp_{sanitize_part(server).lower()}_{sanitize_part(tool).lower()}"
    preferred = clamp_name(base, source)
    if preferred not in used:
        used.add(preferred)
        return preferred
    digest = short_hash(source)[:8]
    with_hash = clamp_name(f"{base}_{digest}", f"{source}:{digest}")
    if with_hash not in used:
        used.add(with_hash)
        return with_hash
    counter = 2
    while True:
        candidate = clamp_name(f"{base}_{digest}_{counter}", f"{source}:{counter}")
        if candidate not in used:
            used.add(candidate)
            return candidate
        counter += 1


# ----------------------------------------------------------------------------------- scoring


def js_json(value: Any) -> str:
    """``JSON.stringify``: no spaces, integral floats without ``.0``, non-ASCII kept."""
    return json.dumps(_integral(value), separators=(",", ":"), ensure_ascii=False)


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_integral(v) for v in value]
    return value


def tool_chars(name: str, description: str, schema: Mapping[str, Any]) -> int:
    """PizzaPi's ``estimateToolChars``."""
    return js_length(name) + js_length(description) + js_length(js_json(schema))


def keywords(query: str) -> list[str]:
    return [k for k in _KEYWORD_SPLIT.split(query.lower()) if len(k) > 1]


def score_tool(name: str, description: str, parameter_names: Sequence[str], query: str) -> int:
    """PizzaPi's ``scoreToolMatch``: 10/5 name, 3 description, 1 parameter, +8/+4 whole query."""
    lowered = (name.lower(), description.lower(), " ".join(parameter_names).lower())
    return score_lowered(lowered, keywords(query), query.lower())


def score_lowered(tool: tuple[str, str, str], words: Sequence[str], query_lower: str) -> int:
    """``score_tool`` on a tool's lowercased (name, description, parameter names joined)."""
    if not words:
        return 0
    name_l, desc_l, params_l = tool
    score = 0
    for word in words:
        if name_l == word:
            score += 10
        elif word in name_l:
            score += 5
        if word in desc_l:
            score += 3
        if word in params_l:
            score += 1
    if query_lower in name_l:
        score += 8
    if query_lower in desc_l:
        score += 4
    return score


#: The most words a column keeps the answer of (a byte per tool each: 2.6 MB at 1,287 tools).
ASKED_WORDS = 2048
#: What parts the tools' strings in a :class:`Column`'s text: no keyword or query holds it.
_SEPARATOR = "\x00"


@dataclass(frozen=True)
class Column:
    """One field of every tool (lowercased), as an array and as one text with each tool's
    string at its own offset, so that which tools contain a word is a few ``str.find`` calls."""

    values: npt.NDArray[np.str_]
    text: str
    #: Where each tool's string starts in ``text`` (and, last, the text's length plus one).
    starts: list[int]
    #: :meth:`contains` of the words already asked (queries share most of theirs).
    _asked: dict[str, BoolArray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, strings: Sequence[str]) -> Column:
        starts, at = [], 0
        for string in strings:
            starts.append(at)
            at += len(string) + len(_SEPARATOR)
        starts.append(at)
        return cls(np.array(strings, dtype=np.str_), _SEPARATOR.join(strings), starts)

    def contains(self, needle: str) -> BoolArray:
        """Whether each tool's string contains ``needle`` (Python's ``in``; read-only: kept for
        the next query that asks the same word)."""
        found = self._asked.get(needle)
        if found is None:
            if len(self._asked) >= ASKED_WORDS:
                self._asked.clear()
            found = self._asked[needle] = self._contains(needle)
            found.setflags(write=False)
        return found

    def _contains(self, needle: str) -> BoolArray:
        size = len(self.starts) - 1
        if not needle or _SEPARATOR in needle:  # the text cannot answer: each string, one by one
            return np.array([needle in v for v in self.values.tolist()], dtype=np.bool_)
        out = np.zeros(size, dtype=np.bool_)
        text, starts = self.text, self.starts
        at = text.find(needle)
        while at >= 0:
            tool = bisect_right(starts, at) - 1
            out[tool] = True
            at = text.find(needle, starts[tool + 1])  # the next tool's string on
        return out


@dataclass(frozen=True)
class LoweredColumns:
    """Every tool's lowercased name, description and joined parameter names."""

    names: Column
    descriptions: Column
    parameters: Column

    @classmethod
    def of(cls, lowered: Sequence[tuple[str, str, str]]) -> LoweredColumns:
        return cls(*(Column.of([t[k] for t in lowered]) for k in range(3)))


def score_columns(columns: LoweredColumns, words: Sequence[str], query_lower: str) -> IntArray:
    """``score_lowered`` for every tool, a column at a time (same rules, same integers)."""
    size = columns.names.values.shape[0]
    score = np.zeros(size, dtype=np.int64)
    if not words or not size:
        return score
    names = columns.names
    for word in words:
        exact = names.values == word
        score += np.where(exact, 10, np.where(names.contains(word), 5, 0))
        score += 3 * columns.descriptions.contains(word)
        score += columns.parameters.contains(word)
    score += 8 * names.contains(query_lower)
    score += 4 * columns.descriptions.contains(query_lower)
    return score


def js_slice(text: str, units: int) -> str:
    """``text.slice(0, units)`` in UTF-16 units."""
    data = text.encode("utf-16-le", errors="surrogatepass")[: units * 2]
    return data.decode("utf-16-le", errors="replace")


# ------------------------------------------------------------------------------------ engine


@dataclass
class _Session:
    """The extension's state: deferred tools (in map order) and tools loaded on demand."""

    deferred: list[int]
    loaded: list[int]


class PizzaPiStrategy:
    """PizzaPi's deferred tools and ``search_tools`` over a catalog."""

    name: ClassVar[str] = "pizzapi"

    def __init__(
        self, catalog: Catalog, bill: TokenBill, params: PizzaPiParams | None = None
    ) -> None:
        self._params = params or PizzaPiParams()
        self.size = len(catalog)
        used: set[str] = set()
        self.names = [
            allocate_name(t.plugin, t.name, used) if t.kind == "mcp" else t.name
            for t in catalog.tools
        ]
        self.descriptions = [source_description(t) for t in catalog.tools]
        self.parameters = [argument_texts(t)[0] for t in catalog.tools]
        self.lowered = [
            (n.lower(), d.lower(), " ".join(ps).lower())
            for n, d, ps in zip(self.names, self.descriptions, self.parameters, strict=True)
        ]
        self.columns = LoweredColumns.of(self.lowered)
        self.chars = [
            tool_chars(n, d, t.input_schema)
            for n, d, t in zip(self.names, self.descriptions, catalog.tools, strict=True)
        ]
        self.total_chars = sum(c for c, t in zip(self.chars, catalog.tools, strict=True) if _mcp(t))
        self._tools = catalog.tools
        self.initially_deferred = self._deferred(catalog.tools)
        self.bill = bill
        self.meta_tokens = definitions_tokens(bill, [SEARCH_TOOLS]) + text_tokens(bill, PROMPT_TEXT)

    def with_params(self, params: PizzaPiParams) -> PizzaPiStrategy:
        """The same catalog under ``params`` (names, sizes and texts are the setting's own:
        a tuner trying many settings builds them once)."""
        other = copy.copy(self)
        other._params = params
        other.initially_deferred = other._deferred(self._tools)
        return other

    @property
    def params(self) -> PizzaPiParams:
        return self._params

    @property
    def active(self) -> bool:
        """Whether tool search manages any tool (something is deferred)."""
        return bool(self.initially_deferred)

    def _deferred(self, tools: Sequence[Tool]) -> tuple[int, ...]:
        exceeded = self.total_chars > self._params.token_threshold
        out = []
        for i, tool in enumerate(tools):
            if not _mcp(tool):
                continue
            choice = self._params.defer_loading.get(tool.plugin)
            if choice is True or (choice is None and exceeded):
                out.append(i)
        return tuple(out)

    def scores(self, query: str, among: Sequence[int]) -> dict[int, int]:
        """``score_tool`` of the tools ``among``, all tools at once (see ``score_columns``)."""
        every = self.query_scores(query)
        return {i: int(every[i]) for i in among}

    def run(self, query: str) -> StrategyResult:
        """One query in a fresh session."""
        return self.run_session([query])[0]

    def run_session(self, queries: Sequence[str]) -> list[StrategyResult]:
        """Queries as the turns of one session (``keep_loaded_tools`` matters from turn two)."""
        session = self._fresh()
        return [self._turn(session, query) for query in queries]

    def _fresh(self) -> _Session:
        return _Session(deferred=list(self.initially_deferred), loaded=[])

    def query_scores(self, query: str) -> IntArray:
        """``score_tool`` of every tool for ``query`` (the same whatever the setting: a tuner
        trying many settings scores each query once and passes it to :meth:`search`)."""
        return score_columns(self.columns, keywords(query), query.lower())

    def search(
        self, query: str, deferred: Sequence[int], every: IntArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        """The deferred tools scoring > 0, best first (ties in deferred order), and scores
        (``every``: :meth:`query_scores` of ``query``, when already made)."""
        scores = self.query_scores(query) if every is None else every
        hits = np.array([i for i in deferred if scores[i] > 0], dtype=np.int64)
        values = np.array([scores[int(i)] for i in hits], dtype=np.float64)
        by_score = np.argsort(-values, kind="stable")
        return hits[by_score], values[by_score]

    def _turn(self, session: _Session, query: str) -> StrategyResult:
        if not self._params.keep_loaded_tools:
            session.deferred.extend(session.loaded)
            session.loaded.clear()
        order, ranked = self.search(query, session.deferred)
        return self._load(session, query, order, ranked, self._params.max_results)

    def _load(
        self, session: _Session, query: str, order: IntArray, ranked: FloatArray, limit: int
    ) -> StrategyResult:
        """Load the first ``limit`` matches into the session; what the request then carries."""
        matches = order[:limit].tolist() if self.active else []
        for i in matches:
            session.loaded.append(i)
            session.deferred.remove(i)
        hidden = set(session.deferred)
        sent = tuple(i for i in range(self.size) if i not in hidden)
        meta = self.meta_tokens + text_tokens(self.bill, self._result_text(query, matches, session))
        return StrategyResult(
            query=query,
            engine=self.name,
            order=order.astype(np.int64),
            scores=full_scores(self.size, order, ranked),
            sent=sent,
            meta_tokens=meta,
            tokens=request_tokens(self.bill, sent, meta),
        )

    def grid(self) -> list[PizzaPiParams]:
        """The settings ``run_grid`` covers: ``max_results`` 1 to 10."""
        return [replace(self._params, max_results=k) for k in GRID_MAX_RESULTS]

    def run_grid(self, query: str) -> list[StrategyResult]:
        """One fresh-session result per ``grid()`` setting, from one scoring."""
        order, ranked = self.search(query, self.initially_deferred)
        return [self.first_turn(query, order, ranked, p.max_results) for p in self.grid()]

    def first_turn(
        self, query: str, order: IntArray, ranked: FloatArray, max_results: int
    ) -> StrategyResult:
        """``run(query)`` with ``max_results`` from a search already made (``search(query,
        initially_deferred)``'s order and scores): one search serves every ``max_results``."""
        return self._load(self._fresh(), query, order, ranked, max_results)

    def _result_text(self, query: str, matches: Sequence[int], session: _Session) -> str:
        """What ``search_tools`` returns to the model for this query (nothing when tool search
        is inactive: every tool is loaded, the model has no reason to search)."""
        if not self.active:
            return ""
        if not matches:
            available = "\n".join(
                f"- {self.names[i]}: {js_slice(self.descriptions[i], 100)}"
                for i in session.deferred
            )
            return f'No tools matched "{query}". Available deferred tools:\n{available}'
        lines = []
        for i in matches:
            params = f" (params: {', '.join(self.parameters[i])})" if self.parameters[i] else ""
            lines.append(f"- **{self.names[i]}**{params}: {self.descriptions[i]}")
        names = ", ".join(self.names[i] for i in matches)
        loaded = f"\n\n✅ Loaded {len(matches)} tool(s): {names}. They are now available for use."
        remaining = len(session.deferred)
        more = (
            f"\n\n{remaining} more deferred tool(s) available — search again if needed."
            if remaining
            else ""
        )
        body = "\n".join(lines)
        return f'Found {len(matches)} tool(s) matching "{query}":\n\n{body}{loaded}{more}'


def _mcp(tool: Tool) -> bool:
    return tool.kind == "mcp"


register(
    Engine(
        name=PizzaPiStrategy.name,
        params=PizzaPiParams,
        build=lambda catalog, bill, params, _: PizzaPiStrategy(catalog, bill, params),
        mark=("▲", "red"),
        shown=("max_results", "token_threshold"),
        place=30,
    )
)
