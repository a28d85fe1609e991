"""Description overrides: a tool search never reaches, described also in the words of the
queries that missed it, and measured held-out as a what-if row is.

A runtime whose gateway can override a tool's description (its search then reads the new one)
has a fix for the ``unreachable-tools`` finding it can write itself. Here, for any such runtime
(it hands in ``run``: its own search over a catalog, billed its way):

- **the words** of a query (:func:`query_words`): lowercase runs of letters and digits that start
  with a letter, three characters or more, not an English stop word (scikit-learn's list);
- **an override** (:func:`propose`) for each tool the cases expect (as a one-tool name) and are
  sent for none of them: the words of those missed queries that the tool's name and description
  lack, that at least :data:`MIN_USES` of them use (all of them when it has fewer) and that are
  *distinctive* (more of its missed queries use the word than the other cases' queries do), the
  most used first, at most :data:`MAX_WORDS` of them and :data:`MAX_ADDED`
  characters. The description is kept whole and gains a last line ``Keywords: w1 w2 ...`` (a
  line the description already ends with is extended);
- **the measurement** (:func:`measure_overrides`): k folds; on each, the overrides are built
  from the training folds' cases only (their queries and what they were sent), and the held-out
  fold's cases run through the runtime's search over the catalog with those descriptions (the
  overridden tools' tokens counted again). The gain is held-out recall minus the baseline's (the
  same cases with the descriptions as they are), per case, paired, with its bootstrap 95 %
  interval (:mod:`workbench.evaluate.intervals`); the proposal is built on every case.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # type: ignore[import-untyped]

from workbench.catalog.models import Catalog
from workbench.evaluate.cases import ResolvedCase
from workbench.evaluate.catalog_findings import unreached_by
from workbench.evaluate.folds import Fold, cross_fit
from workbench.evaluate.intervals import Interval, paired_difference
from workbench.evaluate.metrics import CaseResult, Metrics, Progress, aggregate
from workbench.search.strategies.base import source_description
from workbench.tokens import TokenTable, get_encoding
from workbench.tokens.count import count_functions, tool_function

#: At most this many words are added to one description ...
MAX_WORDS = 12
#: ... and at most this many characters.
MAX_ADDED = 120
#: The line the words are added on.
LEAD = "Keywords: "
#: Words shorter than this say little ("of", "go").
MIN_LENGTH = 3
#: A word is added when at least this many of the tool's missed queries use it (all of them,
#: when it has fewer).
MIN_USES = 2
#: At most this many of a tool's missed queries are kept as evidence.
QUERIES_SHOWN = 3

_WORD = re.compile(r"[a-z][a-z0-9]*")

#: A runtime's search run over ``catalog`` (descriptions as given) for ``cases``, billed with
#: ``bill``: one result per case, in order.
Run = Callable[[Catalog, TokenTable, Sequence[ResolvedCase]], list[CaseResult]]


def query_words(text: str) -> list[str]:
    """The words of ``text`` an override may add, in order, each once."""
    found = (w for w in _WORD.findall(text.lower()) if len(w) >= MIN_LENGTH)
    return list(dict.fromkeys(w for w in found if w not in ENGLISH_STOP_WORDS))


def _known(text: str) -> set[str]:
    """Every word the tool's text already has (a name's parts included: ``get_rank``)."""
    return set(re.findall(r"[a-z0-9]+", text.lower()))


@dataclass(frozen=True)
class Override:
    """One tool's new description and what it was built from."""

    tool: int
    description: str
    words: tuple[str, ...]
    #: The missed queries it was built from (the first :data:`QUERIES_SHOWN`) and how many.
    queries: tuple[str, ...]
    missed: int


def described(old: str, words: Sequence[str]) -> str:
    """``old`` kept whole with ``words`` on its last line (:data:`LEAD`; extended when the
    description already ends with one)."""
    text = old.rstrip()
    lines = text.split("\n")
    if lines[-1].startswith(LEAD):
        have = lines[-1][len(LEAD) :].split()
        lines[-1] = LEAD + " ".join([*have, *(w for w in words if w not in have)])
        return "\n".join(lines)
    return (f"{text}\n" if text else "") + LEAD + " ".join(words)


def _bounded(words: Sequence[str]) -> list[str]:
    kept: list[str] = []
    for word in words:
        if len(kept) == MAX_WORDS or len(" ".join([*kept, word])) > MAX_ADDED:
            break
        kept.append(word)
    return kept


def propose(
    catalog: Catalog,
    names: Sequence[str],
    results: Sequence[CaseResult],
    allowed: Callable[[int], bool] = lambda _: True,
) -> dict[int, Override]:
    """An override for each tool the cases of ``results`` expect and were never sent (and that
    ``allowed`` says the runtime can override), from those cases' queries only (module doc).
    ``names``: each tool's name as the search reads it."""
    used = Counter(w for r in results for w in query_words(r.case.query))
    out: dict[int, Override] = {}
    for tool, missed in unreached_by(results).items():
        if not allowed(tool):
            continue
        old = source_description(catalog.tools[tool])
        known = _known(f"{names[tool]} {old}")
        count: Counter[str] = Counter()
        for r in missed:
            count.update(w for w in query_words(r.case.query) if w not in known)
        # shared by its missed queries, and distinctive: more of them use it than other queries do
        least = min(MIN_USES, len(missed))
        words = [w for w in count if count[w] >= least and count[w] > used[w] - count[w]]
        words.sort(key=lambda w: (-count[w], used[w] - count[w]))  # stable: first used first
        words = _bounded(words)
        if words:
            shown = tuple(r.case.query for r in missed[:QUERIES_SHOWN])
            out[tool] = Override(tool, described(old, words), tuple(words), shown, len(missed))
    return out


def overridden(catalog: Catalog, descriptions: Mapping[int, str]) -> Catalog:
    """``catalog`` with these tools' descriptions replaced (as the gateway lists them)."""
    tools = list(catalog.tools)
    for i, text in descriptions.items():
        tool = tools[i]
        tools[i] = dataclasses.replace(
            tool, description=text, definition={**tool.definition, "description": text}
        )
    return Catalog(tools, catalog.servers, catalog.listings, list(catalog.notes), view=catalog.view)


def recounted(table: TokenTable, catalog: Catalog, changed: Sequence[int]) -> TokenTable:
    """``table`` with the tools at ``changed`` counted again from ``catalog`` (their new
    descriptions cost what they cost)."""
    if not changed:
        return table
    index = sorted(changed)
    per_tool = np.array(table.per_tool, dtype=np.int64)
    functions = [tool_function(catalog.tools[i]) for i in index]
    per_tool[index] = count_functions(functions, get_encoding(table.encoding), table.tool_format)
    return dataclasses.replace(table, per_tool=per_tool)


def with_overrides(
    catalog: Catalog, table: TokenTable, descriptions: Mapping[int, str]
) -> tuple[Catalog, TokenTable]:
    """The catalog with ``descriptions`` and its token table counted again for them."""
    changed = overridden(catalog, descriptions)
    return changed, recounted(table, changed, list(descriptions))


@dataclass(frozen=True)
class OverrideReport:
    """The overrides measured held-out beside the descriptions as they are, on the same cases."""

    #: Built on every case: what would be written.
    proposal: tuple[Override, ...]
    baseline: Metrics
    heldout: Metrics
    #: Held-out recall minus the baseline's (mean of the per-case differences).
    gain: float
    interval: Interval
    hit_gain: float
    folds: int
    #: How many tools each fold's training cases overrode.
    per_fold: tuple[int, ...]
    #: Each case's result in the round that held it out (case order).
    heldout_cases: tuple[CaseResult, ...] = ()

    @property
    def significant(self) -> bool:
        """The gain is outside the error bars: the whole interval is above zero."""
        return bool(self.proposal) and self.interval[0] > 0.0


def measure_overrides(
    catalog: Catalog,
    table: TokenTable,
    cases: Sequence[ResolvedCase],
    run: Run,
    names: Sequence[str],
    *,
    folds: int = 5,
    allowed: Callable[[int], bool] = lambda _: True,
    baseline: Sequence[CaseResult] | None = None,
    on_progress: Progress | None = None,
) -> OverrideReport:
    """The overrides, k-fold held-out (module doc). ``baseline``: ``run`` over ``cases`` with
    the descriptions as they are, when the caller has it already; ``on_progress(done, folds)``
    after each fold."""
    items = list(cases)
    base = list(baseline) if baseline is not None else run(catalog, table, items)

    def fit(fold: Fold) -> dict[int, Override]:
        return propose(catalog, names, [base[c] for c in fold.train], allowed)

    def measure(built: dict[int, Override], fold: Fold) -> list[CaseResult]:
        out = [base[c] for c in fold.test]  # nothing changes: the held-out cases fare as they do
        if built and fold.test:
            descriptions = {t: o.description for t, o in built.items()}
            changed, bill = with_overrides(catalog, table, descriptions)
            out = run(changed, bill, [items[c] for c in fold.test])
        if on_progress is not None:
            on_progress(fold.index + 1, folds)
        return out

    crossed = cross_fit(len(items), folds, fit, measure)
    held = crossed.case_order()
    per_fold = [len(built) for built in crossed.settings]
    proposal = propose(catalog, names, base, allowed)
    tokens_all = int(table.all)
    recall_new = [r.recall for r in held]
    recall_old = [r.recall for r in base]
    heldout, before = aggregate(held, tokens_all), aggregate(base, tokens_all)
    return OverrideReport(
        proposal=tuple(proposal.values()),
        baseline=before,
        heldout=heldout,
        gain=heldout.recall - before.recall,
        interval=paired_difference(recall_new, recall_old),
        hit_gain=heldout.hit - before.hit,
        folds=folds,
        per_fold=tuple(per_fold),
        heldout_cases=tuple(held),
    )
