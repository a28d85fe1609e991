"""Names files (``--keep-file``, ``--always-include-file``): long lists of tools travel as a file,
one name a line or a tuner's ``--json`` output, instead of one flag per tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.cli import main
from workbench.config.namesfile import read_names
from workbench.errors import InputError

SAMPLES = Path(__file__).resolve().parents[1] / "sample_configs"
AGENT = SAMPLES / "research-agent.yaml"
CATALOG = SAMPLES / "research-agent.catalog.json"
CASES = SAMPLES / "research-agent.cases.yaml"
LIVE = Path(__file__).resolve().parent / "data" / "datasets" / "livemcpbench"

NAME = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1
).filter(lambda n: "#" not in n and n.strip() == n and not n.startswith(("{", "[")))


@settings(max_examples=60, deadline=None)
@given(st.lists(NAME, max_size=12), st.lists(st.sampled_from(["", "# a note", "   "])))
def test_text_names_round_trip(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], noise: list[str]
) -> None:
    path = tmp_path_factory.mktemp("names") / "keep.txt"
    path.write_text("\n".join([*noise, *(f"{n}  # kept" for n in names)]) + "\n")
    assert read_names(path, "--keep-file") == names


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=200))
def test_any_file_is_names_or_one_line(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("names") / "any"
    path.write_bytes(data)
    try:
        names = read_names(path, "--keep-file")
    except InputError as err:
        assert str(path) in str(err) and "\n" not in str(err)
    else:
        assert all(n and not any(c.isspace() for c in n) for n in names)


@pytest.mark.parametrize(
    ("doc", "names"),
    [
        ({"setting": {"loaded": ["a-b", "c-d"]}}, ["a-b", "c-d"]),
        ({"setting": {"always_include": ["x"]}}, ["x"]),
        ({"exposed": ["s-t"]}, ["s-t"]),
        (["one", "two"], ["one", "two"]),
    ],
)
def test_json_from_a_tuner(tmp_path: Path, doc: object, names: list[str]) -> None:
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps(doc))
    assert read_names(path, "--keep-file") == names


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"setting": {}}', "without the names of a proposal"),
        ('{"exposed": [1, 2]}', "a JSON list of tool names"),
        ('{"exposed": [', "not JSON"),
        ("two names\n", ":1: one tool name a line"),
    ],
)
def test_bad_files_are_one_line(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "bad"
    path.write_text(text)
    with pytest.raises(InputError, match=said):
        read_names(path, "--keep-file")


def test_export_keep_file_takes_a_tuners_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tune --json > tuned.json`` then ``export --keep-file tuned.json`` loads what was tuned,
    as the same tools given by ``--keep`` flags. On livemcpbench's 94 cases the tuner keeps a
    dozen or more tools loaded (the sample's few cases recur too little for it to keep any)."""
    agent = LIVE / "agent.yaml"
    common = ["--runtime", "anthropic", "--catalog", str(LIVE / "catalog.json")]
    cases = ["--cases", str(LIVE / "cases.jsonl")]
    assert main(["tune", str(agent), *common, *cases, "--json", "--embedder", "none"]) == 0
    tuned = json.loads(capsys.readouterr().out)
    loaded = tuned["setting"]["loaded"]
    assert len(loaded) >= 10, "the tuner keeps tools loaded"
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps(tuned))
    assert main(["export", str(agent), *common, "--keep-file", str(path)]) == 0
    by_file = capsys.readouterr().out
    flags = [f for name in loaded for f in ("--keep", name)]
    assert main(["export", str(agent), *common, *flags]) == 0
    assert by_file == capsys.readouterr().out
    kept = [t["name"] for t in json.loads(by_file) if t.get("defer_loading") is False]
    assert len(kept) == len(loaded)


def test_always_include_file_is_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    path = tmp_path / "always.txt"
    path.write_text("# pinned\nmemory-read_graph\n")
    base = [
        "search",
        str(AGENT),
        "find papers",
        "--catalog",
        str(CATALOG),
        "--json",
        "--embedder",
        "none",
    ]
    assert main([*base, "--always-include-file", str(path)]) == 0
    by_file = json.loads(capsys.readouterr().out)
    assert main([*base, "--always-include", "memory-read_graph"]) == 0
    by_flag = json.loads(capsys.readouterr().out)
    assert by_file["selected"] == by_flag["selected"]
    assert "memory-read_graph" in by_file["selected"]
    missing = tmp_path / "nope.txt"
    assert main([*base, "--always-include-file", str(missing)]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err
