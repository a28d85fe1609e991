"""Figures and settings in words: the lines every report shares (``eval``, ``tune``, the
runtimes' tuners), so that a figure reads the same wherever it is printed."""

from __future__ import annotations

from workbench.config.filtering import ToolFiltering
from workbench.evaluate.budget import Budget
from workbench.evaluate.metrics import Metrics


def describe(setting: ToolFiltering) -> str:
    """A setting on one line."""
    always = ", ".join(setting.always_include) or "none"
    state = "" if setting.enabled else " (disabled: all tools sent)"
    return (
        f"{setting.search_method} top_k {setting.top_k} threshold "
        f"{setting.similarity_threshold:.2f} always_include [{always}] "
        f"top_n_used {setting.always_include_top_n_used}{state}"
    )


def metric_line(m: Metrics) -> str:
    """Recall, hit, top1, MRR and the tokens of a request against all, on one line."""
    return (
        f"recall {m.recall:.3f}  hit {m.hit:.3f}  top1 {m.top1:.3f}  mrr {m.mrr:.3f}  "
        f"tokens {m.tokens_selected_mean:,.0f} / {m.tokens_all:,} ({saved(m)})"
    )


def saved(m: Metrics) -> str:
    """``62.5% saved``, or ``60.2% more than all`` (never a negative saving)."""
    text = m.saved_text()
    return f"{text} than all" if m.token_reduction < 0 else f"{text} saved"


def task_line(m: Metrics) -> str:
    """A search-tool runtime's figures per task (the search round trip included)."""
    change = m.token_reduction
    than = f"{change:.1%} fewer" if change >= 0 else f"{-change:.1%} more"
    return (
        f"hit {m.hit:.3f}  recall {m.recall:.3f}  tokens {m.tokens_selected_mean:,.0f} per "
        f"task ({than} than all {m.tokens_all:,} in one request)"
    )


def task_budget_text(budget: Budget) -> str:
    """A per-task budget in words (the search-tool runtimes' and PizzaPi's tuners)."""
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"at most {budget.max_tokens:,} tokens per task on average")
    if budget.min_hit is not None:
        parts.append(f"the fewest tokens with hit >= {budget.min_hit:g}")
    return " and ".join(parts) or "the knee of the front (as tune's default)"
