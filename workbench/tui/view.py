"""Pure presentation helpers: turn a ranking, a selection and token counts into rows and bars.

No scoring happens here (the scores come from the core); these functions decide what to draw,
and are unit-tested without a terminal.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.catalog import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.search.selection import score_decimals, search_cut, threshold_decimals
from workbench.search.types import FloatArray, IntArray, Ranking, Reason, Selection

#: Token counts per catalog tool (the core gives a numpy array).
Counts = Sequence[int] | IntArray

BLOCKS = " ▏▎▍▌▋▊▉█"
SPARKS = "▁▂▃▄▅▆▇█"
REASON_LABEL: dict[Reason, str] = {
    "search": "search",
    "always_include": "always",
    "top_n_used": "top_n",
}


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of ``width`` cells filled to ``fraction`` (eighth-cell resolution)."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (BLOCKS[part] if part else "")
    return text.ljust(width)


def compact(n: int) -> str:
    """A token count in at most five cells: 777, 9.5k, 35k, 1.2M."""
    if n < 1000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}M"


@dataclass(frozen=True)
class RankRow:
    """One ranked tool as the ranking table draws it."""

    rank: int
    index: int
    tool: str
    server: str
    score: float
    tokens: int
    reason: Reason | None
    #: Decimals the score is drawn with: the same for a whole ranking, and enough that no score
    #: rounds across the threshold line (see :func:`~workbench.search.selection.score_decimals`).
    digits: int = 3
    #: Labelled as expected for the query (sent or missed: ``reason``).
    expected: bool = False


@dataclass(frozen=True)
class CutRow:
    """A separator: where ``top_k`` or the threshold stops the search."""

    label: str


def cut_labels(ranking: Ranking, selection: Selection, setting: ToolFiltering) -> dict[int, str]:
    """Where the cut lines go: ``{rank after which to draw: label}``, from the runtime's
    :func:`~workbench.search.selection.search_cut`.

    The top_k line sits right above the first tool that passes the threshold but found no slot
    left (only when there is one: always_include and top_n_used take slots too); the threshold
    line after the last tool scoring at least the threshold.
    """
    cuts: dict[int, str] = {}
    cut = search_cut(ranking, selection)
    if setting.enabled and cut.top_k is not None:
        cuts[cut.top_k] = f"top_k {setting.top_k}"
    threshold = f"threshold {threshold_text(setting.similarity_threshold)}"
    at = cut.threshold
    cuts[at] = f"{cuts[at]} · {threshold}" if at in cuts else threshold
    return cuts


def threshold_text(threshold: float) -> str:
    """The threshold as the ranking draws it: two decimals, more when it has them."""
    return f"{threshold:.{threshold_decimals(threshold)}f}"


def ranking_rows(
    ranking: Ranking,
    selection: Selection,
    catalog: Catalog,
    per_tool: Counts,
    setting: ToolFiltering,
    limit: int = 100,
    expected: Collection[int] = (),
) -> list[RankRow | CutRow]:
    """The first ``limit`` ranked tools with the cut lines between them, then any selected or
    ``expected`` tool ranked below ``limit`` (an always-included tool far down is still shown as
    sent, an expected one as missed)."""
    cuts = cut_labels(ranking, selection, setting)
    rows: list[RankRow | CutRow] = []
    if 0 in cuts:
        rows.append(CutRow(cuts[0]))
    order = [int(i) for i in ranking.order]
    shown = order[:limit]
    on_show = set(shown)
    wanted = {*(int(i) for i in selection.indices), *expected}
    below = sorted((i for i in wanted if i not in on_show), key=ranking.rank_of)
    digits = score_decimals(
        (float(ranking.scores[i]) for i in shown + below), setting.similarity_threshold
    )
    for rank, index in enumerate(shown, start=1):
        rows.append(_row(rank, index, ranking, selection, catalog, per_tool, digits, expected))
        if rank in cuts and rank < len(order):
            rows.append(CutRow(cuts[rank]))
    for index in below:
        rank = ranking.rank_of(index)
        rows.append(_row(rank, index, ranking, selection, catalog, per_tool, digits, expected))
    return rows


def _row(
    rank: int,
    index: int,
    ranking: Ranking,
    selection: Selection,
    catalog: Catalog,
    per_tool: Counts,
    digits: int,
    expected: Collection[int] = (),
) -> RankRow:
    tool = catalog.tools[index]
    return RankRow(
        rank=rank,
        index=index,
        tool=tool.full_name,
        server=tool.plugin,
        score=float(ranking.scores[index]),
        tokens=int(per_tool[index]),
        reason=selection.reasons.get(index),
        digits=digits,
        expected=index in expected,
    )


def histogram(scores: FloatArray, bins: int) -> list[int]:
    """How many tools score in each of ``bins`` slices of 0..1 (scores outside are clipped)."""
    if bins <= 0:
        return []
    clipped = np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
    counts, _ = np.histogram(clipped, bins=bins, range=(0.0, 1.0))
    return [int(c) for c in counts]


def sparkline(counts: Sequence[int]) -> str:
    """Counts as block characters, scaled to the largest (an empty slice is a space).

    A log scale: one tool in a slice is still visible next to a slice of a thousand.
    """
    top = max(counts, default=0)
    if top == 0:
        return " " * len(counts)
    scale = np.log1p(top)
    chars = []
    for c in counts:
        if c == 0:
            chars.append(" ")
        else:
            level = round(float(np.log1p(c) / scale) * (len(SPARKS) - 1))
            chars.append(SPARKS[max(level, 0)])
    return "".join(chars)


@dataclass(frozen=True)
class ServerTokens:
    server: str
    all: int
    sent: int
    tools: int
    chosen: int


def server_tokens(catalog: Catalog, per_tool: Counts, chosen: Sequence[int]) -> list[ServerTokens]:
    """Tokens of every server's tools, all of them and those sent, in catalog order.

    Runs on every keystroke, so it sums with numpy over a per-catalog server index.
    """
    names, codes = _server_codes(catalog)
    tokens = np.asarray(per_tool, dtype=np.int64)
    picked = np.zeros(len(codes), dtype=bool)
    picked[np.asarray(list(chosen), dtype=np.intp)] = True
    size = len(names)
    all_tokens = np.bincount(codes, weights=tokens, minlength=size)
    sent = np.bincount(codes, weights=np.where(picked, tokens, 0), minlength=size)
    tools = np.bincount(codes, minlength=size)
    chosen_n = np.bincount(codes, weights=picked, minlength=size)
    return [
        ServerTokens(name, int(all_tokens[i]), int(sent[i]), int(tools[i]), int(chosen_n[i]))
        for i, name in enumerate(names)
    ]


_CODES: dict[int, tuple[Catalog, list[str], IntArray]] = {}


def _server_codes(catalog: Catalog) -> tuple[list[str], IntArray]:
    """The servers in catalog order and each tool's server number (cached per catalog)."""
    hit = _CODES.get(id(catalog))
    if hit is not None and hit[0] is catalog and len(hit[2]) == len(catalog.tools):
        return hit[1], hit[2]
    numbers: dict[str, int] = {}
    codes = np.fromiter(
        (numbers.setdefault(t.plugin, len(numbers)) for t in catalog.tools),
        dtype=np.int64,
        count=len(catalog.tools),
    )
    if len(_CODES) > 8:
        _CODES.clear()
    _CODES[id(catalog)] = (catalog, list(numbers), codes)
    return list(numbers), codes


def saved(all_tokens: int, sent: int) -> float:
    """Share of tokens saved, 0..1 (0 when there is nothing to send)."""
    return 0.0 if all_tokens <= 0 else max(0.0, 1.0 - sent / all_tokens)
