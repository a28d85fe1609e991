"""``compare --runtimes`` and its error bars: every runtime tuned and measured held-out on the
same cases (the stackone data set's copy, the real tokenizer), and the 95 % intervals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.cli import main
from workbench.evaluate.ci95 import bootstrap_mean, wilson

STACKONE = Path(__file__).resolve().parent / "data" / "datasets" / "stackone"


def test_wilson_matches_the_textbook_values() -> None:
    low, high = wilson(81, 263)  # Wilson's interval for 81/263: 0.2553 to 0.3662
    assert low == pytest.approx(0.2553, abs=5e-4) and high == pytest.approx(0.3662, abs=5e-4)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    assert 0.0 < wilson(0, 10)[1] < 0.35 and 0.65 < wilson(10, 10)[0] < 1.0
    assert wilson(0, 0) == (0.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 500), st.integers(1, 500))
def test_wilson_contains_the_proportion_inside_zero_one(k: int, n: int) -> None:
    k = min(k, n)
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_bootstrap_brackets_the_mean_and_narrows_with_more_cases() -> None:
    rng = np.random.default_rng(1)
    small = rng.random(30).tolist()
    large = rng.random(3000).tolist()
    lo_s, hi_s = bootstrap_mean(small)
    lo_l, hi_l = bootstrap_mean(large)
    assert lo_s <= float(np.mean(small)) <= hi_s and lo_l <= float(np.mean(large)) <= hi_l
    assert hi_l - lo_l < (hi_s - lo_s) / 3
    assert bootstrap_mean([5.0] * 10) == (5.0, 5.0)
    assert bootstrap_mean(small) == bootstrap_mean(small)  # seeded: same figures, same bars


def _compare(*extra: str) -> list[str]:
    return [
        "compare",
        str(STACKONE / "agent.yaml"),
        "--catalog",
        str(STACKONE / "catalog.json"),
        "--cases",
        str(STACKONE / "cases.jsonl"),
        "--embedder",
        "none",
        "--runtimes",
        *extra,
    ]


def test_compare_runtimes_json_has_every_runtime_with_error_bars(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_compare("--json")) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["runtime"]: r for r in data["rows"]}
    assert list(rows) == ["holodeck-0.6", "holodeck-0.7", "anthropic", "claude-code", "openai"]
    for row in rows.values():
        figures, ci = row["heldout"], row["ci95"]
        for key, value in (("hit", "hit"), ("recall", "recall"), ("tokens", "tokens_mean")):
            assert ci[key][0] <= figures[value] + 1e-9 and figures[value] <= ci[key][1] + 1e-9
        assert 0 < figures["tokens_mean"] < data["tokens_all"]
    for name in ("anthropic", "claude-code", "openai"):
        assert "approximation" in rows[name]["note"]


def test_the_06_row_is_tunes_own_held_out_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """The per-case figures re-measured fold by fold pool to what tune reports held-out."""
    assert main(_compare("--json")) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert main(["tune", *_compare()[1:-1], "--runtime", "holodeck-0.6", "--json"]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert row["heldout"]["recall"] == pytest.approx(tuned["heldout"]["recall"], abs=1e-9)
    assert row["heldout"]["hit"] == pytest.approx(tuned["heldout"]["hit"], abs=1e-9)


def test_compare_runtimes_text_has_the_table_and_one_plot(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_compare()) == 0
    out = capsys.readouterr().out
    assert "hit (95% CI)" in out and "Wilson" in out and "bootstrap" in out
    for mark in ("6 holodeck-0.6", "7 holodeck-0.7", "A anthropic", "C claude-code", "O openai"):
        assert mark in out
    assert out.count("tokens per request (mean)") == 1
