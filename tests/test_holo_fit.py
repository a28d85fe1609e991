"""The engine's held-out fit (workbench.evaluate.holo_fit): its figures are what the engine's own
search gives under each fold's settings, signals earn their place, the threshold refuses what no
tool answers, and the settings are what ``serve --settings`` reads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from provided import LOCAL_EXTRA

from workbench.catalog.build import mcp_tools
from workbench.catalog.models import AS_LISTED, Catalog
from workbench.evaluate.cases import Case, ResolvedCase, load_cases, resolve_cases
from workbench.evaluate.folds import folds_of
from workbench.evaluate.holo_fit import HoloFit, Target, _Grid, _Variant, fit_holo
from workbench.search.holo.engine import HoloEngine
from workbench.search.holo.neighbours import Labelled
from workbench.search.holo.settings import DEFAULT_FIELDS, HoloSettings, settings_from
from workbench.search.types import Embedder
from workbench.workspace import open_workspace

DATA = Path(__file__).parent / "data" / "datasets"

#: Four servers of three tools, each tool with words of its own in its description.
SERVERS: dict[str, list[tuple[str, str]]] = {
    "weather": [
        ("forecast", "rain sunshine tomorrow outlook"),
        ("alerts", "storm hurricane tornado warning"),
        ("history", "past temperature archive records"),
    ],
    "mail": [
        ("send", "compose deliver letter recipient"),
        ("inbox", "unread messages received folder"),
        ("contacts", "address book people phone"),
    ],
    "files": [
        ("read", "open document contents text"),
        ("write", "save overwrite bytes disk"),
        ("remove", "delete erase trash unlink"),
    ],
    "maps": [
        ("route", "directions driving walking path"),
        ("nearby", "restaurants cafes shops around"),
        ("geocode", "latitude longitude coordinates lookup"),
    ],
}


def _catalog() -> Catalog:
    tools = []
    for server, listing in SERVERS.items():
        rows: list[dict[str, Any]] = [
            {
                "name": name,
                "description": text,
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
            for name, text in listing
        ]
        tools += mcp_tools(server, rows)[0]
    return Catalog(tools=tools, servers=[])


CATALOG = _catalog()
#: Made-up token counts: a different size per tool, so that a budget passes some over.
TOKENS = np.asarray([40.0 + 13.0 * (i % 5) for i in range(len(CATALOG.tools))])


def _cases() -> list[ResolvedCase]:
    """Two queries per tool, each with two of its description's words."""
    cases: list[Case] = []
    for server, listing in SERVERS.items():
        for name, text in listing:
            words = text.split()
            cases.append(Case(f"please {words[0]} {words[1]}", (f"{server}-{name}",)))
            cases.append(Case(f"{words[2]} and {words[3]} now", (f"{server}-{name}",)))
    return resolve_cases(cases, CATALOG).cases


def _engines(embedder: Embedder | None = None) -> list[HoloEngine]:
    return [
        HoloEngine(CATALOG, TOKENS, embedder, fields=fields)
        for fields in (DEFAULT_FIELDS, {**DEFAULT_FIELDS, "name": 3, "parameters": 0})
    ]


def _remeasured(
    fit: HoloFit,
    catalog: Catalog,
    tokens: np.ndarray,
    cases: list[ResolvedCase],
    embedder: Embedder | None = None,
) -> list[float]:
    """Each case's recall from the engine's own search under the settings its fold chose, the
    neighbour signal given the training cases only (and its tokens, checked against the fit's)."""
    out = [0.0] * len(cases)
    for fold, settings in zip(folds_of(len(cases), fit.folds), fit.fold_settings, strict=True):
        train = [cases[i] for i in fold.train]
        labelled = Labelled.of(
            [c.query for c in train], [sorted({t for g in c.groups for t in g}) for c in train]
        )
        engine = HoloEngine(catalog, tokens, embedder, fields=settings.fields, labelled=labelled)
        for i in fold.test:
            found = engine.search(cases[i].query, settings).indices
            assert fit.case_tokens[i] == pytest.approx(float(tokens[list(found)].sum()))
            got = set(found)
            groups = cases[i].groups
            out[i] = sum(bool(got & set(g)) for g in groups) / len(groups)
    return out


@pytest.mark.parametrize(
    "target",
    [Target(top_k=1), Target(top_k=None, max_tokens=130), Target(top_k=3, max_tokens=45)],
    ids=["top_k", "budget", "tight-budget"],
)
def test_held_out_figures_are_the_engines_own_search(target: Target) -> None:
    cases = _cases()
    fit = fit_holo(_engines(), cases, target=target, folds=3)
    assert len(fit.fold_settings) == 3 and fit.heldout.cases == len(cases)
    again = _remeasured(fit, CATALOG, TOKENS, cases)
    assert list(fit.case_recall) == pytest.approx(again)
    assert fit.heldout.recall == pytest.approx(float(np.mean(again)))
    assert fit.heldout.recall > 0.8  # each query has two words of its tool's description
    lo, hi = fit.heldout.ci95["recall"]
    assert lo <= fit.heldout.recall <= hi
    assert fit.gap["recall"] == pytest.approx(fit.insample.recall - fit.heldout.recall)
    if target.max_tokens is not None:
        # within the budget, but for a best tool over it alone (returned all the same)
        over = [t for t in fit.case_tokens if t > target.max_tokens]
        assert all(t in set(TOKENS.tolist()) for t in over)
        assert (fit.settings.max_tokens, fit.settings.top_k) == (target.max_tokens, target.top_k)
        assert bool(over) == (target.max_tokens < TOKENS.max())
    else:
        assert set(fit.case_tokens) <= {float(t) for t in TOKENS}


def test_the_server_signal_and_named_tools_as_the_engine_ranks_them() -> None:
    """Each case expects its server's three tools; half name one of them outright."""
    cases: list[Case] = []
    for server, listing in SERVERS.items():
        every = tuple(f"{server}-{name}" for name, _ in listing)
        for name, text in listing:
            words = text.split()
            cases.append(Case(f"{words[0]} {words[1]} with {server}-{name}", every))
            cases.append(Case(f"{words[2]} {words[3]}", every))
    resolved = resolve_cases(cases, CATALOG).cases
    fit = fit_holo(_engines(), resolved, target=Target(top_k=3), folds=3, eliminate=False)
    assert all(s.weights["server"] > 0 and s.name_first for s in fit.fold_settings)
    assert list(fit.case_recall) == pytest.approx(_remeasured(fit, CATALOG, TOKENS, resolved))
    assert fit.heldout.recall > 0.9


def test_a_tool_the_query_names_comes_first() -> None:
    """The words describe another server's tool; the name written is the one expected."""
    tools = [(server, name) for server, listing in SERVERS.items() for name, _ in listing]
    texts = [text for listing in SERVERS.values() for _, text in listing]
    cases = [
        Case(f"{texts[(i + 3) % len(texts)]} then {server}-{name}", (f"{server}-{name}",))
        for i, (server, name) in enumerate(tools)
    ]
    resolved = resolve_cases(cases, CATALOG).cases
    fit = fit_holo(
        _engines(), resolved, target=Target(top_k=1), folds=3, signals=["lexical"], eliminate=False
    )
    assert all(s.name_first for s in fit.fold_settings) and fit.heldout.recall == 1.0
    assert list(fit.case_recall) == pytest.approx(_remeasured(fit, CATALOG, TOKENS, resolved))


def test_a_select_query_returns_exactly_its_tools() -> None:
    cases = _cases()
    cases += resolve_cases(
        [
            Case("select:mail-send,files-read", ("mail-send", "files-read")),
            Case("select:weather-alerts", ("weather-forecast",)),
        ],
        CATALOG,
    ).cases
    fit = fit_holo(_engines(), cases, target=Target(top_k=1), folds=3)
    assert fit.case_recall[-2:] == (1.0, 0.0)
    both = [CATALOG.position("mail-send"), CATALOG.position("files-read")]
    assert fit.case_tokens[-2] == float(TOKENS[both].sum())
    assert list(fit.case_recall) == pytest.approx(_remeasured(fit, CATALOG, TOKENS, cases))


def _code_word_cases(shared: bool) -> list[ResolvedCase]:
    """Queries in words no tool has: a code word per tool (``shared``: two queries use it, so
    only another labelled query can tell which tool it wants), or a word per query (not shared:
    nothing can)."""
    cases: list[Case] = []
    codes = ["zork", "quib", "flim", "drax", "plov", "vesk", "trun", "gorp", "snib", "yalt"]
    tools = [f"{s}-{n}" for s, listing in SERVERS.items() for n, _ in listing][: len(codes)]
    for code, tool in zip(codes, tools, strict=True):
        for j in range(2):
            word = code if shared else code + ("ab", "cd")[j]  # one word: no digits
            cases.append(Case(f"{word} please, job {j}", (tool,)))
    return resolve_cases(cases, CATALOG).cases


def test_the_neighbour_signal_is_cross_fitted() -> None:
    shared = _code_word_cases(shared=True)
    fit = fit_holo(_engines(), shared, target=Target(top_k=1), folds=2)
    assert fit.settings.weights["neighbour"] > 0
    assert fit.heldout.recall >= 0.5  # a held-out query's twin is often in the training folds
    assert list(fit.case_recall) == pytest.approx(_remeasured(fit, CATALOG, TOKENS, shared))
    alone = _code_word_cases(shared=False)
    fit = fit_holo(
        _engines(), alone, target=Target(top_k=1), folds=2, signals=["neighbour"], eliminate=False
    )
    # a case's own label never counts: chosen on every case, it still finds next to nothing
    assert fit.insample.recall <= 0.2 and fit.heldout.recall <= 0.2


def test_signals_earn_their_place() -> None:
    fit = fit_holo(_engines(), _cases(), target=Target(top_k=1), folds=3)
    evidence = {s.signal: s for s in fit.signals}
    lexical = evidence["lexical"]
    assert lexical.kept and lexical.lift is not None and lexical.interval is not None
    assert lexical.interval[0] > 0.0
    assert fit.settings.weights["lexical"] > 0
    assert not evidence["dense"].kept and evidence["dense"].why.startswith("not scored")
    for name in ("name", "server", "cost"):  # the names and sizes say nothing of these queries
        assert not evidence[name].kept, evidence[name]
        assert fit.settings.weights[name] == 0.0
    assert set(fit.kept) == {s.signal for s in fit.signals if s.kept}
    data = fit.to_json()
    assert data["kept"] == list(fit.kept) and len(data["signals"]) == len(fit.signals)


def _rules(effects: dict[str, np.ndarray], base: np.ndarray, unchosen: frozenset[str]) -> Any:
    """A stand-in for the k-fold rule (a unit of the elimination's logic): the held-out recall
    of each case with some signals allowed is ``base`` plus each allowed signal's effect; every
    fold weights every allowed signal but those in ``unchosen``."""
    from workbench.evaluate.holo_fit import _Choice, _Rule
    from workbench.search.holo.fusion import SIGNALS

    def rule_of(allowed: frozenset[str]) -> _Rule:
        recall = base + sum((effects[s] for s in allowed if s in effects), np.zeros_like(base))
        weights = tuple(1.0 if s in allowed and s not in unchosen else 0.0 for s in SIGNALS)
        choices = tuple(_Choice((0, weights, True), None) for _ in range(5))
        n = recall.size
        return _Rule(choices, recall, recall > 0, np.zeros(n), 0, 0)

    return rule_of


def test_the_simplest_rule_within_one_standard_error_of_the_best_is_kept() -> None:
    """A signal whose lift is real but inside its 95 % interval stays (1.4 standard errors on
    100 cases: the rule that asked for the interval's lower end above 0 left it out); a signal
    of noise and one that changes nothing go; a signal no fold chose is said so."""
    from workbench.evaluate.holo_fit import _eliminate
    from workbench.evaluate.intervals import paired_difference, paired_standard_error

    n = 100
    base = np.full(n, 0.2)
    base[68:80] = 0.5
    lexical = np.zeros(n)
    lexical[:60] = 0.3  # a strong signal
    neighbour = np.zeros(n)
    neighbour[60:69] = 0.5  # a modest one: +0.5 on 9 cases, -0.5 on 4
    neighbour[76:80] = -0.5
    cost = np.zeros(n)
    cost[80:83], cost[83:86] = 0.5, -0.5  # noise: as many cases lose as gain
    effects = {"lexical": lexical, "neighbour": neighbour, "cost": cost, "server": np.zeros(n)}
    lift, se = float(neighbour.mean()), paired_standard_error(neighbour, np.zeros(n))
    assert se < lift < 1.96 * se
    assert paired_difference(neighbour, np.zeros(n))[0] < 0.0  # inside its 95 % interval
    rule_of = _rules(effects, base, frozenset({"name"}))
    allowed = frozenset({"lexical", "neighbour", "cost", "server", "name"})
    rule, kept, evidence = _eliminate(rule_of, rule_of(allowed), allowed)
    assert kept == {"lexical", "neighbour"}
    assert rule.recall == pytest.approx(base + lexical + neighbour)
    assert evidence["neighbour"].kept and evidence["neighbour"].lift == pytest.approx(lift)
    # against the best rule met: the first, with the noise (no lower, no higher on average)
    assert evidence["neighbour"].se == pytest.approx(
        paired_standard_error(neighbour + cost, np.zeros(n))
    )
    assert evidence["lexical"].kept
    for useless in ("cost", "server"):
        assert not evidence[useless].kept and evidence[useless].lift == pytest.approx(0.0)
        assert "within one standard error" in evidence[useless].why
    assert not evidence["name"].kept and evidence["name"].why == "no fold chose it"


def test_of_two_signals_that_carry_the_same_evidence_one_stays() -> None:
    """dense and server_text both read the query's vector: when either alone does what both do,
    one goes and the other stays (its removal then costs what both are worth)."""
    from workbench.evaluate.holo_fit import _Choice, _eliminate, _Rule
    from workbench.search.holo.fusion import SIGNALS

    n = 80
    gain = np.zeros(n)
    gain[:30] = 0.5

    def rule_of(allowed: frozenset[str]) -> _Rule:
        recall = 0.3 + (gain if allowed & {"dense", "server_text"} else np.zeros(n))
        weights = tuple(1.0 if s in allowed else 0.0 for s in SIGNALS)
        return _Rule((_Choice((0, weights, True), None),), recall, recall > 0, np.zeros(n), 0, 0)

    allowed = frozenset({"dense", "server_text"})
    rule, kept, evidence = _eliminate(rule_of, rule_of(allowed), allowed)
    # each costs nothing alone: the first in SIGNALS' order goes, then the other is worth both
    assert kept == {"server_text"}
    assert rule.recall.mean() == pytest.approx(0.3 + gain.mean())
    assert evidence["server_text"].kept
    assert evidence["server_text"].lift == pytest.approx(gain.mean())
    assert not evidence["dense"].kept and evidence["dense"].lift == pytest.approx(0.0)


def test_a_signal_left_out_by_the_caller_is_never_weighted() -> None:
    fit = fit_holo(_engines(), _cases(), target=Target(top_k=1), folds=3, signals=["name"])
    assert fit.settings.weights["lexical"] == 0.0
    assert {s.signal: s.why for s in fit.signals}["lexical"] == "not allowed"


def test_the_settings_are_what_serve_reads() -> None:
    base = HoloSettings(pins=("mail-send",), embedder=None)
    fit = fit_holo(_engines(), _cases(), target=Target(top_k=2), folds=3, base=base)
    assert settings_from(fit.settings.to_json()) == fit.settings
    assert fit.settings.pins == ("mail-send",) and fit.settings.top_k == 2
    assert dict(fit.settings.fields) in (
        dict(DEFAULT_FIELDS),
        {**DEFAULT_FIELDS, "name": 3, "parameters": 0},
    )
    assert fit.settings.threshold is None and fit.no_answer is None


NO_ANSWER = [
    "bake a chocolate cake",
    "tune my guitar strings",
    "knit a woolly scarf",
    "paint the garden fence",
    "train the puppy to sit",
    "brew some green tea",
]


def test_the_threshold_refuses_what_no_tool_answers() -> None:
    cases = _cases()
    engines = _engines()
    fit = fit_holo(engines, cases, target=Target(top_k=1), no_answer=NO_ANSWER, folds=3)
    account = fit.no_answer
    assert account is not None and account.cases == len(NO_ANSWER)
    assert account.refused == len(NO_ANSWER)  # held out: none shares a word with a tool
    assert account.answerable_refused == 0
    threshold = fit.settings.threshold
    assert threshold is not None and 0.0 < threshold <= 0.5
    engine = HoloEngine(CATALOG, TOKENS, None, fields=fit.settings.fields)
    assert engine.search("bake a chocolate cake", fit.settings).refused
    answered = engine.search("storm hurricane", fit.settings)
    assert not answered.refused and answered.indices
    assert fit.to_json()["no_answer"]["refused"] == len(NO_ANSWER)


def test_too_few_no_answer_cases_fit_no_threshold() -> None:
    fit = fit_holo(_engines(), _cases(), target=Target(top_k=1), no_answer=NO_ANSWER[:2], folds=3)
    assert fit.settings.threshold is None
    assert fit.no_answer is not None and fit.no_answer.note is not None
    assert "cannot fill 3 folds" in fit.no_answer.note


def _livemcpbench_slice() -> tuple[Catalog, np.ndarray, list[ResolvedCase]]:
    """livemcpbench's catalog as listed, its token counts, and its first 40 cases."""
    folder = DATA / "livemcpbench"
    ws = open_workspace(
        folder / "agent.yaml",
        catalog_file=folder / "catalog.json",
        embedder_spec="none",
        view=AS_LISTED,
    )
    tokens = np.asarray(ws.tokens.per_tool, dtype=np.float64)
    return (
        ws.catalog,
        tokens,
        resolve_cases(load_cases(folder / "cases.jsonl"), ws.catalog).cases[:40],
    )


def test_held_out_on_a_real_slice_matches_the_engine() -> None:
    catalog, tokens, cases = _livemcpbench_slice()
    engines = [
        HoloEngine(catalog, tokens, None, fields=fields)
        for fields in (DEFAULT_FIELDS, {**DEFAULT_FIELDS, "name": 3, "parameters": 0})
    ]
    fit = fit_holo(engines, cases, target=Target(top_k=5), folds=5)
    again = _remeasured(fit, catalog, tokens, cases)
    assert list(fit.case_recall) == pytest.approx(again)
    lexical_only = HoloSettings(weights={"lexical": 1.0, "dense": 0.0, "name": 0.0}, top_k=5)
    plain = HoloEngine(catalog, tokens, None)
    base = np.mean(
        [
            sum(bool(set(plain.search(c.query, lexical_only).indices) & set(g)) for g in c.groups)
            / len(c.groups)
            for c in cases
        ]
    )
    assert fit.heldout.recall >= base - 0.05  # held out, it stays near BM25 alone on all cases


@LOCAL_EXTRA
def test_with_the_real_minilm_the_figures_are_the_engines() -> None:
    from workbench.search.embedders import LocalEmbedder

    minilm = LocalEmbedder("all-MiniLM-L6-v2")
    engine = HoloEngine(CATALOG, TOKENS, minilm)
    # the server_text signal: one value per server, the mail server's highest for a mail query
    raw = engine.signals("compose a letter and deliver it to my inbox").raw["server_text"]
    by_server = {t.server: float(raw[i]) for i, t in enumerate(CATALOG.tools)}
    assert all(raw[i] == by_server[t.server] for i, t in enumerate(CATALOG.tools))
    assert max(by_server, key=lambda name: by_server[name]) == "mail"
    cases = _cases()
    fit = fit_holo(_engines(minilm), cases, target=Target(top_k=1), folds=3)
    assert {s.signal: s for s in fit.signals}["dense"].why != "not scored (no embedder)"
    again = _remeasured(fit, CATALOG, TOKENS, cases, minilm)
    assert list(fit.case_recall) == pytest.approx(again)
    assert fit.heldout.recall > 0.8


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    tokens=st.lists(st.integers(1, 400), min_size=1, max_size=30),
    seed=st.integers(0, 2**32 - 1),
    budget=st.integers(1, 3000),
    top_k=st.sampled_from([None, 1, 2, 5, 40]),
)
def test_filling_a_budget_for_every_case_at_once_is_the_engines_pick(
    tokens: list[int], seed: int, budget: int, top_k: int | None
) -> None:
    from workbench.evaluate.holo_fit import _fill
    from workbench.search.holo.engine import pick

    costs = np.asarray(tokens, dtype=np.float64)
    rng = np.random.default_rng(seed)
    order = np.stack([rng.permutation(costs.size) for _ in range(4)]).astype(np.int64)
    chosen = _fill(order, costs, top_k, budget)
    for row in range(4):
        assert set(np.flatnonzero(chosen[row]).tolist()) == set(
            pick(order[row], costs, top_k, budget)
        )


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.lists(st.integers(0, 3), min_size=8, max_size=8), min_size=1, max_size=5),
    k=st.integers(1, 9),
)
def test_the_top_k_of_every_case_at_once_breaks_ties_as_the_engine(
    scores: list[list[int]], k: int
) -> None:
    """Ties (many here) go to the lower catalog index, as the engine's stable sort has them."""
    engine = HoloEngine(CATALOG, TOKENS, None)
    variant = _Variant(
        engine, {}, np.zeros((len(scores), 12), dtype=bool), np.zeros(0), np.zeros(0, dtype=bool)
    )
    grid = _Grid([variant], [], Target(top_k=k), None, Labelled.of([], []))
    total = np.zeros((len(scores), 12))
    total[:, :8] = scores
    chosen, tokens = grid._select(total)
    for row in range(len(scores)):
        want = np.argsort(-total[row], kind="stable")[:k]
        assert np.flatnonzero(chosen[row]).tolist() == sorted(want.tolist())
        assert tokens[row] == pytest.approx(float(TOKENS[want].sum()))


def test_a_folds_setting_owes_nothing_to_its_own_cases_not_even_its_signals() -> None:
    """Which signals earn their place is chosen within each fold's training cases (nested): the
    labels of fold 0's held-out cases change nothing of the setting measured on them. (Chosen
    from every case's held-out figure, as before, the signals fold 0 was allowed depended on
    them: the reported figure was not held out.)"""
    catalog, tokens, cases = _livemcpbench_slice()
    engines = [HoloEngine(catalog, tokens, None)]
    fit = fit_holo(engines, cases, target=Target(top_k=5), folds=5)
    held = folds_of(len(cases), 5)[0].test
    # fold 0's cases now expect a tool none of their searches finds (the catalog's last)
    nowhere = (len(catalog.tools) - 1,)
    relabelled = [
        replace(case, groups=(nowhere,)) if i in held else case for i, case in enumerate(cases)
    ]
    again = fit_holo(engines, relabelled, target=Target(top_k=5), folds=5)
    assert again.fold_settings[0] == fit.fold_settings[0]
    assert [again.case_recall[i] for i in held] == [0.0] * len(held)
    assert fit.signals != again.signals  # the elimination on every case did see the change


@pytest.mark.parametrize("nested_loss", [0.0, 0.2])
def test_signals_are_left_out_only_when_the_whole_procedure_held_out_does_not_lose(
    nested_loss: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The elimination leaves out a signal of noise; held out nested (a stand-in here: the
    elimination on each fold's training cases), the procedure either holds its figure (the
    signal goes, and the nested figure is the one reported) or loses more than one standard
    error to the rule with every signal (every signal stays, that rule reported)."""
    import workbench.evaluate.holo_fit as holo_fit
    from workbench.evaluate.holo_fit import _earned, _Rule

    n = 100
    base = np.full(n, 0.4)
    lexical = np.zeros(n)
    lexical[:50] = 0.4
    cost = np.zeros(n)
    cost[50:53], cost[53:56] = 0.3, -0.3
    rule_of = _rules({"lexical": lexical, "cost": cost}, base, frozenset())
    allowed = frozenset({"lexical", "cost"})
    first = rule_of(allowed)
    nested_recall = base + lexical - np.where(np.arange(n) < 40, nested_loss, 0.0)
    nested = _Rule(first.choices, nested_recall, nested_recall > 0, np.zeros(n), 0, 0)
    monkeypatch.setattr(holo_fit, "_nested", lambda fit, used, folds: nested)

    class Fit:
        rule = staticmethod(rule_of)

    rule, kept, evidence = _earned(Fit(), first, allowed, 5)  # type: ignore[arg-type]
    if nested_loss == 0.0:
        assert rule is nested and kept == {"lexical"}
        assert not evidence["cost"].kept
    else:
        assert rule is first and kept == allowed
        assert evidence["cost"].kept and evidence["cost"].why.startswith("not left out")
        assert "held out recall 0.520" in evidence["cost"].why
        assert "below 0.600 with every signal" in evidence["cost"].why
