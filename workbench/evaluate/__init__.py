"""Labelled cases, metrics, sweeps, the tuner and diagnostics.

The API the CLI and the dashboard's Evaluate view share (every call is plain and thread-safe to
run in a worker; ``on_progress(done, total)`` feeds a progress bar, and raising from it stops the
run):

- cases: :func:`load_cases` (a file), :func:`cases_from_agent` (the agent's test_cases),
  :func:`resolve_cases` -> :class:`CaseSet` (``.warnings()`` lists unknown names with file:line);
- one setting: :func:`evaluate` -> :class:`EvalReport` (``.metrics``, ``.by_category``,
  ``.per_case``, ``.misses``: each a :class:`CaseResult` with ``.missed`` names and the rank of
  the first expected tool, to open the query in the query lab);
- every setting: :func:`sweep_settings` -> :class:`SweepResult` (``.metrics_of(setting)`` marks
  the current setting) and :func:`pareto_front` -> :class:`FrontPoint` list (``.setting`` is a
  ready ToolFiltering to adopt);
- a proposal: :func:`tune_cases` -> :class:`TuneReport` (held-out figures, the current block's);
- findings: :func:`diagnose` -> :class:`Finding` list.
"""

from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import (
    Case,
    CaseSet,
    ResolvedCase,
    cases_from_agent,
    load_cases,
    resolve_cases,
)
from workbench.evaluate.diagnostics import Finding, diagnose, has_errors
from workbench.evaluate.metrics import CaseResult, EvalReport, Metrics, evaluate
from workbench.evaluate.runs import TuneReport, measure_setting, sweep_settings, tune_cases
from workbench.evaluate.sweep import FrontPoint, SweepResult, pareto_front

__all__ = [
    "Budget",
    "Case",
    "CaseResult",
    "CaseSet",
    "EvalReport",
    "Finding",
    "FrontPoint",
    "Metrics",
    "ResolvedCase",
    "SweepResult",
    "TuneReport",
    "cases_from_agent",
    "diagnose",
    "evaluate",
    "has_errors",
    "load_cases",
    "measure_setting",
    "pareto_front",
    "resolve_cases",
    "sweep_settings",
    "tune_cases",
]
