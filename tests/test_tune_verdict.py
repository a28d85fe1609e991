"""No tuner recommends a loss (issue 29): every runtime's ``tune`` on an agent of three small real
servers (the test extras mcp-server-time and mcp-server-fetch over stdio, the npm server-memory:
12 tools, 864 tokens) with hand-labelled cases, judged by the one rule of
:mod:`workbench.evaluate.verdict`.

The servers are listed once (``holo-tune snapshot`` in a module fixture); the tuners run on the
snapshot. Each symptom of the issue has its test: regex search or ``--top-k 1`` proposed at a
loss, ``--apply`` writing it silently, allowlists exposing none of the tools, ``change`` said for
a loss of recall.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from workbench.cli import main
from workbench.evaluate.budget import Budget
from workbench.runtimes import runtime_names

# imported where used, so that each test of the commands fails on the code before the verdict
# by what it does, not by an import error

REPO = Path(__file__).resolve().parents[1]
MEMORY = REPO / ".cache" / "npm-servers" / "node_modules" / ".bin" / "mcp-server-memory"

AGENT = """\
name: small-agent
description: Tells the time, fetches pages and remembers things.
model:
  provider: openai
  name: gpt-4o-mini
instructions:
  inline: You help with the tools at hand.
tools:
  - name: time
    type: mcp
    description: Current time and time zone conversion
    command: uvx
    args: ["mcp-server-time"]
  - name: fetch
    type: mcp
    description: Fetch a URL and return its content as markdown
    command: uvx
    args: ["mcp-server-fetch"]
  - name: memory
    type: mcp
    description: A persistent knowledge graph of entities, relations and observations
    command: npx
    args: ["-y", "@modelcontextprotocol/server-memory"]
tool_filtering:
  enabled: true
  top_k: 5
  similarity_threshold: 0.3
  search_method: bm25
"""

#: Hand-labelled: what a user of this agent types, and the tool it needs.
CASES = [
    ("what time is it in Tokyo right now?", "get_current_time"),
    ("current time in New York please", "get_current_time"),
    ("if it is 9am in London what time is it in Sydney", "convert_time"),
    ("convert 14:30 Berlin time to Los Angeles time", "convert_time"),
    ("get me the contents of https://example.com", "fetch"),
    ("read this web page and summarise it https://python.org/news", "fetch"),
    ("download the markdown of the docs page at docs.python.org", "fetch"),
    ("remember that Alice works at Acme", "create_entities"),
    ("add a note to Bob that he prefers tea", "add_observations"),
    ("record that Alice manages Bob", "create_relations"),
    ("what do you know about Alice?", "search_nodes"),
    ("show me everything in the knowledge graph", "read_graph"),
    ("forget Bob entirely", "delete_entities"),
    ("remove the observation that Bob likes tea", "delete_observations"),
    ("Alice no longer manages Bob, delete that link", "delete_relations"),
    ("open the details of the entities Alice and Bob", "open_nodes"),
    ("find people in memory who work at Acme", "search_nodes"),
]


def _cases_yaml() -> str:
    lines = ["cases:"]
    for query, tool in CASES:
        lines += [f"  - query: {json.dumps(query)}", f"    expected: [{tool}]"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three servers listed once, started as the suite starts them (the test extras' modules
    with this Python, the npm server from .cache/npm-servers)."""
    if not MEMORY.exists():
        pytest.skip("the npm servers are not installed (make servers)")
    folder = tmp_path_factory.mktemp("small-agent")
    listed = AGENT.replace('command: uvx\n    args: ["mcp-server-time"]', _py("mcp_server_time"))
    listed = listed.replace('command: uvx\n    args: ["mcp-server-fetch"]', _py("mcp_server_fetch"))
    listed = listed.replace(
        'command: npx\n    args: ["-y", "@modelcontextprotocol/server-memory"]',
        f"command: {MEMORY}\n    args: []",
    )
    (folder / "listed.yaml").write_text(listed)
    out = folder / "small.catalog.json"
    assert main(["snapshot", str(folder / "listed.yaml"), "-o", str(out)]) == 0
    return out


def _py(module: str) -> str:
    import sys

    return f'command: {sys.executable}\n    args: ["-m", "{module}"]'


@pytest.fixture
def agent(tmp_path: Path, snapshot: Path) -> Path:
    """The agent (as a user writes it: uvx and npx) and its cases file, in a folder of its own."""
    path = tmp_path / "small.yaml"
    path.write_text(AGENT)
    (tmp_path / "small.cases.yaml").write_text(_cases_yaml())
    shutil.copy(snapshot, tmp_path / "small.catalog.json")
    return path


def _tune(
    agent: Path, runtime: str, *more: str, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    argv = ["tune", str(agent), "--catalog", str(agent.with_suffix(".catalog.json"))]
    argv += ["--cases", str(agent.with_suffix(".cases.yaml")), "--runtime", runtime]
    assert main([*argv, "--no-what-if", "--json", *more]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def _heldout_recall(data: dict[str, Any]) -> float:
    return float(data["heldout"]["recall"])


RUNTIMES = [name for name in runtime_names()]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_default_budget_keeps_every_tool_of_a_small_agent(
    agent: Path, runtime: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """864 tokens for every tool: filtering saves little, every runtime says keep every tool
    (the old tuners proposed regex search at recall 0, top_k 1, no tool exposed)."""
    data = _tune(agent, runtime, capsys=capsys)
    verdict = data["verdict"]
    assert verdict["kind"] == "keep-all" and verdict["kept"], verdict
    assert "at most 2,000" in verdict["reason"]
    # the text report calls the tuner's setting what it is: tuned, not proposed
    argv = ["tune", str(agent), "--catalog", str(agent.with_suffix(".catalog.json"))]
    argv += ["--cases", str(agent.with_suffix(".cases.yaml")), "--runtime", runtime]
    assert main([*argv, "--no-what-if"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("tuned     ") for line in lines)
    assert not any(line.startswith("proposed") for line in lines)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_runtime_recommends_a_loss_within_a_tight_budget(
    agent: Path, runtime: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget the user set: the proposal stands only when it reaches some tool (never recall
    0), and a loss beyond the error bar is said as one (``give-up``), never ``change``."""
    data = _tune(agent, runtime, "--max-tokens", "250", capsys=capsys)
    verdict = data["verdict"]
    recall = verdict["difference"]["recall"]
    if verdict["proposal"]["recall"] == 0.0 and verdict["current"]["recall"] > 0:
        assert verdict["kind"] == "keep" and verdict["kept"]
    elif recall["ci95"][1] < 0:
        assert verdict["kind"] == "give-up" and verdict["worse"]
        assert "gives up" in verdict["reason"]
    else:
        assert verdict["kind"] in ("change", "tie", "same") and not verdict["worse"]
    assert verdict["proposal"]["recall"] == pytest.approx(_heldout_recall(data))


def test_allowlists_never_expose_no_tool(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """holodeck-0.7 at a budget below every useful tool: the old tuner proposed 0 of 12 tools
    (recall 0); the verdict keeps the current setting."""
    data = _tune(agent, "holodeck-0.7", "--max-tokens", "250", capsys=capsys)
    assert data["heldout"]["recall"] == 0.0  # what the budget buys
    assert data["verdict"]["kind"] == "keep"
    assert "recall 0" in data["verdict"]["reason"]


def test_serve_apply_of_a_loss_exits_2_and_writes_nothing(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tune --runtime serve --apply`` proposed ``--top-k 1`` at a loss of recall and wrote it
    into .mcp.json without a word: now one line, exit 2, no file; ``--force`` writes the fitted
    settings and the entry that reads them."""
    argv = ["tune", str(agent), "--catalog", str(agent.with_suffix(".catalog.json"))]
    argv += ["--cases", str(agent.with_suffix(".cases.yaml")), "--runtime", "serve"]
    argv += ["--no-what-if", "--max-tokens", "250", "--apply"]
    mcp = agent.parent / ".mcp.json"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "refused: the proposal is measured worse than the current setting" in err
    assert "--force" in err and not mcp.exists()
    assert not (agent.parent / "holo-tune.settings.json").exists()
    assert main([*argv, "--force"]) == 0
    assert "--settings" in mcp.read_text()
    assert (agent.parent / "holo-tune.settings.json").exists()


def test_block_apply_of_a_loss_exits_2_and_leaves_the_file(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """holodeck-0.6 at a budget that costs recall (the file's top_k 10 against the budget's top_k
    1): ``tune --apply`` refuses, the file is untouched; ``--force`` writes the block."""
    agent.write_text(AGENT.replace("top_k: 5", "top_k: 10"))
    before = agent.read_bytes()
    argv = ["tune", str(agent), "--catalog", str(agent.with_suffix(".catalog.json"))]
    argv += ["--cases", str(agent.with_suffix(".cases.yaml")), "--no-what-if"]
    argv += ["--max-tokens", "60", "--apply"]
    assert main(argv) == 2
    assert "measured worse" in capsys.readouterr().err
    assert agent.read_bytes() == before
    assert main([*argv, "--force"]) == 0
    assert agent.read_bytes() != before


def test_apply_of_a_worse_block_exits_2(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``apply --top-k 1`` measured on the cases against the file's top_k 10: refused, file
    untouched; ``--force`` writes it."""
    agent.write_text(AGENT.replace("top_k: 5", "top_k: 10"))
    before = agent.read_bytes()
    base = ["apply", str(agent), "--catalog", str(agent.with_suffix(".catalog.json"))]
    base += ["--cases", str(agent.with_suffix(".cases.yaml"))]
    assert main([*base, "--top-k", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") >= 1 and "refused: the setting is measured worse" in err
    assert agent.read_bytes() == before
    assert main([*base, "--top-k", "1", "--force"]) == 0
    assert "top_k: 1" in agent.read_text()


def test_the_default_budget_keeps_the_file_with_apply(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Plain ``tune --apply`` on the small agent writes nothing (keep every tool), exit 0."""
    before = agent.read_bytes()
    argv = ["tune", str(agent), "--catalog", str(agent.with_suffix(".catalog.json"))]
    argv += ["--cases", str(agent.with_suffix(".cases.yaml")), "--no-what-if", "--apply"]
    assert main(argv) == 0
    assert "nothing written: the verdict is keep-all" in capsys.readouterr().err
    assert agent.read_bytes() == before


# ------------------------------------------------------------------ the rule, on its own


class _Case:
    def __init__(self, recall: float, tokens: int) -> None:
        self.recall, self.hit, self.tokens = recall, recall > 0, tokens


def _side(recalls: list[float], tokens: int) -> list[_Case]:
    """Cases with these recalls, each sending ``tokens``."""
    return [_Case(r, tokens) for r in recalls]


def test_no_budget_never_says_change_for_a_loss_of_recall() -> None:
    """The old verdict said "change" for recall -0.100 to save tokens (the tokens' interval
    excluded 0); with no budget flag the tuner does not trade recall for tokens."""
    from workbench.evaluate.verdict import judge

    current = _side([1.0] * 20, 1000)
    proposal = _side([1.0] * 18 + [0.0] * 2, 800)
    verdict = judge(proposal, current, budget=Budget(), tokens_all=9000)
    assert verdict.kind == "keep" and verdict.kept and not verdict.worse
    explicit = judge(proposal, current, budget=Budget(max_tokens=800), tokens_all=9000)
    assert explicit.kind == "change" and "within the error bar" in explicit.reason


def test_a_loss_beyond_the_error_bar_is_kept_or_given_up() -> None:
    from workbench.evaluate.verdict import judge

    current = _side([1.0] * 20, 1000)
    proposal = _side([1.0] * 10 + [0.0] * 10, 500)
    kept = judge(proposal, current, budget=Budget(), tokens_all=9000)
    assert kept.kind == "keep" and kept.worse
    given = judge(proposal, current, budget=Budget(max_tokens=500), tokens_all=9000)
    assert given.kind == "give-up" and given.worse and not given.kept
    zero = judge(_side([0.0] * 20, 10), current, budget=Budget(max_tokens=10), tokens_all=9000)
    assert zero.kind == "keep" and zero.worse
    assert judge(current, current, budget=Budget(), tokens_all=9000, same=True).kind == "same"


def test_a_small_agent_keeps_every_tool_when_the_tuner_lands_on_the_current_setting() -> None:
    """The knee of a small agent's front can be what runs now (Claude Code's nothing loaded on
    the 864-token agent): the verdict still says keep every tool, not "nothing to change"."""
    from workbench.evaluate.verdict import judge

    current = _side([0.6] * 20, 230)
    verdict = judge(current, current, budget=Budget(), tokens_all=864, same=True)
    assert verdict.kind == "keep-all" and verdict.kept and "at most 2,000" in verdict.reason
    flagged = judge(current, current, budget=Budget(max_tokens=300), tokens_all=864, same=True)
    assert flagged.kind == "same"


def test_a_budget_that_fits_every_tool_keeps_every_tool() -> None:
    from workbench.evaluate.verdict import judge

    current = _side([0.5] * 20, 1000)
    verdict = judge(current, current, budget=Budget(max_tokens=9000), tokens_all=9000)
    assert verdict.kind == "keep-all"


def test_compare_runtimes_shows_no_row_at_recall_0(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --runtimes`` showed holodeck-0.7 with "0 of N MCP tools exposed", recall 0:
    a row whose tuner reaches no tool stands at the runtime's current setting, marked kept."""
    argv = ["compare", str(agent), "--catalog", str(agent.with_suffix(".catalog.json"))]
    argv += ["--cases", str(agent.with_suffix(".cases.yaml")), "--runtimes"]
    assert main([*argv, "--max-tokens", "250", "--json"]) == 0
    rows = {r["runtime"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert all(r["heldout"]["recall"] > 0 for r in rows.values()), rows
    seven = rows["holodeck-0.7"]
    assert seven["kept"] and "recall 0" in seven["kept"] and seven["params"]["kept"]
    assert seven["setting"] == "current kept: 12 of 12 MCP tools exposed (openai-agents)"
    assert seven["heldout"]["recall"] == 1.0
