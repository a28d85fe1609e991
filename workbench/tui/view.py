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
from workbench.tui.lab import HoloView

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
    #: serve's engine: the score split by signal (each signal with a weight), and how full the
    #: score's bar is drawn (None: the score itself, a 0-1 similarity).
    split: tuple[SignalShare, ...] = ()
    fill: float | None = None


@dataclass(frozen=True)
class SignalShare:
    """One signal's part of a tool's fused score (serve's engine): its raw value for the tool
    (None for a derived signal: ``server``, ``cost``) and its share, weight × z-score (the
    shares sum to the score)."""

    name: str
    raw: float | None
    share: float


#: The signals' short names, for the ranking's columns (their full names in the detail line).
SIGNAL_LABEL: dict[str, str] = {
    "dense": "dense",
    "lexical": "lex",
    "name": "name",
    "neighbour": "nbr",
    "server": "srv",
    "cost": "cost",
}


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


#: Decimals of a fused score (serve's engine): a sum of z-scores, not a 0-1 similarity.
HOLO_DIGITS = 2


def holo_cut_labels(view: HoloView) -> dict[int, str]:
    """Where serve's search stopped, as ``{rank after which to draw: label}``: no tool fits
    (above the first row), where ``top_k`` (or ``max_tokens``) stopped it, the last tool a
    ``select:`` names, and the last tool with evidence of its own (the tools below it share
    no word nor name part with the query: a search never returns them)."""
    result = view.result
    ranked = result.ranking
    settings = view.settings
    cuts: dict[int, str] = {}

    def add(at: int, label: str) -> None:
        cuts[at] = f"{cuts[at]} · {label}" if at in cuts else label

    position = {int(index): rank for rank, index in enumerate(ranked.order.tolist(), start=1)}
    size = len(position)
    if result.refused:
        threshold = settings.threshold
        if threshold is not None and ranked.confidence < threshold and not ranked.named:
            add(0, f"no tool fits · confidence {ranked.confidence:.2f} < threshold {threshold:.2f}")
        else:
            add(0, "no tool fits · no tool shares a word with the query")
        return cuts
    if ranked.selected is not None:
        if ranked.selected:
            add(max(position[i] for i in ranked.selected), "select: exactly these")
        return cuts
    found = [int(i) for i in ranked.found]
    returned = [int(i) for i in result.indices]
    if returned and len(returned) < len(found):
        last = max(position[i] for i in returned)
        budget = settings.max_tokens
        full = settings.top_k is not None and len(returned) >= settings.top_k
        add(last, f"top_k {settings.top_k}" if full or budget is None else f"max_tokens {budget:,}")
    if found and len(found) < size:
        add(max(position[i] for i in found), "no evidence below (no word in common)")
    return cuts


def holo_rows(
    view: HoloView,
    catalog: Catalog,
    per_tool: Counts,
    limit: int = 100,
    expected: Collection[int] = (),
) -> list[RankRow | CutRow]:
    """serve's ranking as :func:`ranking_rows` draws HoloDeck's: the first ``limit`` tools in
    its order with its cut lines (:func:`holo_cut_labels`), then any pinned or ``expected``
    tool ranked below; each row with its score split by signal."""
    ranked = view.result.ranking
    selection = view.selection()
    cuts = holo_cut_labels(view)
    order = [int(i) for i in ranked.order]
    shown = order[:limit]
    on_show = set(shown)
    position = {index: rank for rank, index in enumerate(order, start=1)}
    wanted = {*selection.indices, *expected}
    below = sorted((i for i in wanted if i not in on_show), key=position.__getitem__)
    drawn = [float(ranked.scores[i]) for i in shown + below]
    low, high = min(drawn, default=0.0), max(drawn, default=0.0)
    span = high - low

    def row(rank: int, index: int) -> RankRow:
        tool = catalog.tools[index]
        score = float(ranked.scores[index])
        return RankRow(
            rank=rank,
            index=index,
            tool=tool.full_name,
            server=tool.plugin,
            score=score,
            tokens=int(per_tool[index]),
            reason=selection.reasons.get(index),
            digits=HOLO_DIGITS,
            expected=index in expected,
            split=signal_split(view, index),
            fill=(score - low) / span if span > 0 else 1.0,
        )

    rows: list[RankRow | CutRow] = []
    if 0 in cuts:
        rows.append(CutRow(cuts[0]))
    for rank, index in enumerate(shown, start=1):
        rows.append(row(rank, index))
        if rank in cuts and rank < len(order):
            rows.append(CutRow(cuts[rank]))
    rows.extend(row(position[index], index) for index in below)
    return rows


def signal_split(view: HoloView, index: int) -> tuple[SignalShare, ...]:
    """Tool ``index``'s fused score split by signal (the signals with a weight, in fusion
    order), each with its raw value where the query scores it."""
    shares = view.result.ranking.shares
    out = []
    for name, values in shares.items():
        raw = view.raw.get(name)
        out.append(
            SignalShare(name, None if raw is None else float(raw[index]), float(values[index]))
        )
    return tuple(out)


def split_text(row: RankRow) -> str:
    """The detail of one tool's score under serve's engine: its name without the server's
    prefix, the score, then each signal's raw value and the share it became
    (``dense 0.612→+1.520``; a derived signal has no raw value); the shares sum to the score."""
    parts = []
    for part in row.split:
        raw = "" if part.raw is None else f"{part.raw:.3g}→"
        parts.append(f"{part.name} {raw}{part.share:+.3f}")
    terms = "  ".join(parts) if parts else "no signal has a weight"
    prefix = f"{row.server}-"
    name = row.tool[len(prefix) :] if row.tool.startswith(prefix) else row.tool
    return f"{name} {row.score:.3f} = {terms}"


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
