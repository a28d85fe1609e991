"""Every registered runtime through the same checks (the runtime interface's contract).

Whatever a runtime module says of itself must hold: it is found by its flag and by nothing that
names another; it says its knobs, bill and engine; its tuner gives held-out figures for every
case; its export passes its own rules (or says in one line that there is nothing to export); a
refused write is one line; and ``tune --apply`` is a diff that applies, or nothing at all. A new
runtime module gets these checks by being registered.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.runtimes import all_runtimes, get_runtime, runtime_names
from workbench.runtimes.base import SOURCES, Probe, Runtime, TuneRequest
from workbench.runtimes.compare import runtime_row
from workbench.runtimes.detect import check_writable, detect_runtime
from workbench.runtimes.search_tool import SearchToolRuntime
from workbench.runtimes.search_tool_tune import export_command, loaded_text, runtime_json
from workbench.workspace import Workspace, build_workspace

SAMPLES = Path(__file__).resolve().parents[1] / "sample_configs"
AGENT = SAMPLES / "research-agent.yaml"
CATALOG = SAMPLES / "research-agent.catalog.json"
CASES = SAMPLES / "research-agent.cases.yaml"
RUNTIMES = [pytest.param(r, id=r.name) for r in all_runtimes()]


def test_the_registry_has_one_runtime_per_name() -> None:
    names = runtime_names()
    assert len(names) == len(set(names)) >= 5
    assert sum(r.default for r in all_runtimes()) >= 1
    for name in names:
        assert get_runtime(name).name == name


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_runtime_says_what_it_is(runtime: Runtime) -> None:
    assert runtime.title and runtime.billing and runtime.tunes and runtime.writes
    assert runtime.knobs and all(k.name and k.meaning and k.default for k in runtime.knobs)
    assert runtime.engine.name and runtime.engine.text
    assert len(runtime.marker[0]) == 1
    assert runtime.budget_flags <= {"--max-tokens", "--min-reduction", "--min-hit"}


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_detection_by_flag_and_by_evidence(runtime: Runtime, tmp_path: Path) -> None:
    info = detect_runtime(AGENT, {}, explicit=runtime.name)
    assert info.plugin is runtime and info.source == "flag"
    (tmp_path / ".git").mkdir()
    probe = Probe(tmp_path / "agent.yaml", {"name": "a"}, lambda dist: None)
    evidence = runtime.detect(probe)
    assert evidence is None or (evidence.reason and evidence.source in SOURCES[1:])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_refusals_are_one_line(runtime: Runtime) -> None:
    info = detect_runtime(AGENT, {}, explicit=runtime.name)
    for change in ("tool_filtering", "allowlists"):
        why = check_writable(info, change)  # type: ignore[arg-type]
        assert why is None or (why.startswith("refused: ") and "\n" not in why)
    if runtime.reads_tool_filtering:
        assert check_writable(info, "tool_filtering") is None


@pytest.fixture(scope="module")
def context() -> tuple[Workspace, CaseSet]:
    agent = load_agent(AGENT, environ={"BRAVE_API_KEY": "x"})
    catalog = load_catalog(agent, catalog_file=CATALOG)
    ws = build_workspace(agent, catalog, embedder_spec="none")
    return ws, resolve_cases(load_cases(CASES), ws.catalog)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_compare_row_has_held_out_figures_for_every_case(
    runtime: Runtime, context: tuple[Workspace, CaseSet]
) -> None:
    ws, cases = context
    row = runtime_row(runtime, ws, cases)
    assert row.runtime == runtime.name and row.setting
    assert len(row.cases) == len(cases)
    assert all(0.0 <= c.recall <= 1.0 and c.tokens > 0 for c in row.cases)
    assert all(c.hit == (c.recall > 0) for c in row.cases)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_compare_row_is_tuned_within_the_budget(
    runtime: Runtime, context: tuple[Workspace, CaseSet]
) -> None:
    """Half its knee's tokens: within it, or its cheapest point flagged (never silently over)."""
    ws, cases = context
    cache: dict[object, object] = {}
    knee = runtime_row(runtime, ws, cases, cache=cache)
    budget = round(knee.tokens / 2)
    row = runtime_row(runtime, ws, cases, budget, cache=cache)
    assert row.budget == budget and knee.budget is None and knee.within
    if row.within:
        assert row.tokens <= budget * 1.1 and row.tokens < knee.tokens
    else:  # its tuner could not get within it: said, never silently over
        assert row.over
    nothing = runtime_row(runtime, ws, cases, 0, cache=cache)
    assert nothing.over and nothing.budget == 0


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_compare_row_is_a_view_of_what_tune_returns(
    runtime: Runtime, context: tuple[Workspace, CaseSet]
) -> None:
    """One entry point per tuner: ``tune``'s outcome carries the row ``compare --runtimes``
    shows, its held-out figures those of the report ``tune --json`` prints (asked as compare
    asks: only the figures, which may use what a written setting could not)."""
    ws, cases = context
    info = detect_runtime(AGENT, {}, explicit=runtime.name)
    request = TuneRequest(
        ws, cases, info, max_tokens=4000, folds=3, what_if=False, quiet=True, figures_only=True
    )
    outcome = runtime.tune(request)
    row = outcome.row
    assert row.runtime == runtime.name and row.budget == 4000 and len(row.cases) == len(cases)
    if row.kept is None:  # the proposal's figures (a kept row: the current setting's)
        held = outcome.json["heldout"]
        hit, recall = held["hit"], held["recall"]
        assert row.hit == pytest.approx(hit, abs=1e-6)
        assert row.recall == pytest.approx(recall, abs=1e-6)
    assert row == runtime_row(runtime, ws, cases, 4000, folds=3)


@pytest.mark.parametrize("name", ["holodeck-0.6", "holodeck-0.7"])
def test_the_block_and_the_allowlists_report_as_every_set_tuner(
    name: str, context: tuple[Workspace, CaseSet]
) -> None:
    """The block's tuner and the allowlists' report what every set tuner shares, once
    (:class:`~workbench.evaluate.generalise.SetReport`): the proposal, its figures, the folds
    and each fold's setting, each case held out in fold order (the row's order) and under the
    current setting; their verdict's unit is a request."""
    from workbench.evaluate.generalise import SetReport
    from workbench.evaluate.runtimes import figures

    ws, cases = context
    runtime = get_runtime(name)
    info = detect_runtime(AGENT, {}, explicit=name)
    outcome = runtime.tune(TuneRequest(ws, cases, info, folds=3, what_if=False, quiet=True))
    report = outcome.report
    assert isinstance(report, SetReport) and report.unit == "request"
    assert report.folds == 3 and len(report.fold_settings) == 3
    assert len(report.heldout_cases) == len(report.current_cases) == len(cases)
    assert report.current is not None and report.verdict.label in outcome.text
    if outcome.row.kept is None:
        assert outcome.row.cases == figures(report.heldout_cases)
    assert outcome.json["heldout"]["recall"] == pytest.approx(report.heldout.recall)


SEARCH_TOOLS = [
    pytest.param(r, id=r.name)
    for r in all_runtimes()
    if isinstance(r, SearchToolRuntime) and type(r).tune is SearchToolRuntime.tune
]


@pytest.mark.parametrize("runtime", SEARCH_TOOLS)
def test_a_search_tool_runtimes_words_are_data(
    runtime: SearchToolRuntime, context: tuple[Workspace, CaseSet]
) -> None:
    """The tune report's bill, proposed and default lines, the compare row, the export line
    and the keys ``tune --json`` adds are its ``words`` filled in (data a runtime declares, not
    methods it overrides)."""
    ws, cases = context
    hooks = ("bill_text", "setting_text", "row_text", "default_text", "write_line")
    for hook in (*hooks, "loaded_text", "export_command", "report_json", "variant_flag"):
        assert not hasattr(runtime, hook), hook
    info = detect_runtime(AGENT, {}, explicit=runtime.name)
    outcome = runtime.tune(TuneRequest(ws, cases, info, folds=3, what_if=False, quiet=True))
    report, words = outcome.report, runtime.words
    lines = outcome.text.splitlines()
    assert f"bill      {words.bill_line(bool(report.extra_tokens))}" in lines
    loaded = loaded_text(runtime, report.setting, ws)
    assert f"{report.verdict.label}  {words.proposed_line(report.setting, loaded)}" in lines
    default = words.default_line(runtime.variants[0], runtime.default_results)
    assert any(line.startswith(f"default   {default}: ") for line in lines)
    if outcome.row.kept is None:
        assert outcome.row.setting == words.row_line(report.setting)
    if not report.verdict.kept:
        export = export_command(runtime, report.setting, ws)
        last = words.write_lines(export, runtime.config_where(ws))
        assert outcome.text.endswith(last + "\n")
    own = [key for key, _ in words.json]
    assert list(outcome.json)[-len(own) :] == own
    filled = runtime_json(runtime, report.setting, ws, None)  # the keys not read from the config
    assert all(outcome.json[k] == filled[k] for k, v in words.json if not v.startswith("config"))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_dashboards_words_are_data(runtime: Runtime) -> None:
    """The header's reason, the knobs' note and what the refusal dialog says instead are the
    runtime's ``words`` filled in: no runtime overrides a method for them."""
    for hook in ("short_reason", "knobs_note", "instead"):
        assert not hasattr(runtime, hook), hook
    words = runtime.words
    flagged = detect_runtime(AGENT, {}, explicit=runtime.name)
    assert words.reason(flagged) == "--runtime"
    note = words.knobs_note(runtime)
    assert (note is None) == runtime.reads_tool_filtering
    assert note is None or runtime.name in note
    assert "my-agent.yaml" in words.instead_line(runtime.name, "my-agent.yaml")


def _cli(*args: str) -> list[str]:
    return [*args, "--catalog", str(CATALOG), "--embedder", "none"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_export_passes_its_own_rules_or_says_why_not(
    runtime: Runtime, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    code = main(["export", str(AGENT), "--runtime", runtime.name, "--catalog", str(CATALOG)])
    out, err = capsys.readouterr()
    if code == 2:  # nothing to export: one line that says what to use instead
        assert not out and len(err.strip().splitlines()) == 1 and "holo-tune tune" in err
        return
    assert code == 0 and out.strip()
    agent = load_agent(AGENT, environ={"BRAVE_API_KEY": "x"})
    catalog = load_catalog(agent, catalog_file=CATALOG, view=runtime.catalog_view)
    config = runtime.tool_config(agent, catalog, frozenset())
    if config is not None:
        assert out == config.text
        assert getattr(runtime, "check_config", lambda doc: None)(config.doc) is None


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_tune_apply_is_a_diff_that_applies_or_nothing(
    runtime: Runtime,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    (tmp_path / ".git").mkdir()
    agent = tmp_path / "agent.yaml"
    shutil.copy(AGENT, agent)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    args = _cli("tune", str(agent), "--runtime", runtime.name, "--cases", str(CASES))
    code = main([*args, "--apply", "--json", "--no-what-if"])
    out, err = capsys.readouterr()
    if code == 2:  # a proposal measured worse than the current setting: refused, nothing written
        assert (
            err.strip()
            .splitlines()[-1]
            .startswith("holo-tune: error: refused: the proposal is measured worse")
        ), err
        assert json.loads(out)["verdict"]["worse"]
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
        code = main([*args, "--apply", "--force", "--json", "--no-what-if"])
        out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["runtime"]["name"] == runtime.name
    assert 0.0 <= report["heldout"]["recall"] <= 1.0
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    changed = [n for n in after if before.get(n) != after[n] and not n.endswith(".bak")]
    for name in changed:
        backup = [n for n in after if n.startswith(name) and n.endswith(".bak")]
        assert name not in before or backup, f"{name} changed without a backup"
        assert "+++ " in err or "@@" in err, "a write shows its diff"
    load_agent(agent, environ={"BRAVE_API_KEY": "x"})  # whatever was written still loads
