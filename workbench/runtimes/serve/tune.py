"""serve's tuner as data: its engine fitted held out (:mod:`workbench.evaluate.serve_tune`),
the report's text and JSON, and the writes ``--apply`` makes where serve and its client read
them: the settings file beside the agent and the client's entry starting serve with
``--settings`` (diff first, backup). The JSON's ``settings`` key is what ``serve --settings``
reads (the whole report may be given as the settings file)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from workbench.evaluate.budget import Budget
from workbench.evaluate.holo_fit import Figures
from workbench.evaluate.runtimes import serve_row
from workbench.evaluate.serve_tune import (
    ServeTuneReport,
    serve_engines,
    settings_words,
    tune_serve,
)
from workbench.runtimes.base import ConfigWrite, TuneOutcome, TuneRequest
from workbench.search.holo.settings import HoloSettings
from workbench.workspace import Workspace

if TYPE_CHECKING:
    from workbench.runtimes.detect import RuntimeInfo
    from workbench.runtimes.serve import Serve


def tune_serve_outcome(serve: Serve, request: TuneRequest) -> TuneOutcome:
    """``tune --runtime serve``: the fit within the budget, held out."""
    ws = request.ws
    budget = Budget(max_tokens=request.cap(), min_reduction=request.min_reduction)
    notes: list[str] = []
    if request.min_hit is not None:
        notes.append("--min-hit is not a target of serve's tuner: it fits recall within the budget")
    embedder, store = ws.embedder.embedder, ws.embedder.cache
    engines = None
    if request.cache is not None:  # the engines and their query signals, once for every budget
        engines = _memo(
            request.cache,
            ("serve-engines", id(ws.catalog)),
            lambda: serve_engines(ws.catalog, ws.tokens, embedder, store),
        )
    report = tune_serve(
        ws.catalog,
        ws.tokens,
        request.cases,
        budget,
        tokens_all=int(ws.tokens.all),
        embedder=embedder,
        embedder_spec=ws.embedder.spec if embedder is not None else None,
        cache=store,
        current=serve.current_settings(ws),
        folds=request.folds,
        engines=engines,
        # figures that are never written may use the neighbour signal without a cases file
        neighbours=True if request.figures_only else None,
    )
    notes += serve.tuner_notes(ws)

    def writes(forced: bool) -> tuple[ConfigWrite, ...]:
        chosen = report.settings if forced else report.proposed
        return (serve.settings_write(ws, chosen),)

    return TuneOutcome(
        report,
        human(serve, report, ws, request.info, forced=request.force),
        report.to_json(),
        serve_row(request.info.name, report, settings_words(report.settings), request.cap()),
        notes=tuple(notes),
        verdict=report.verdict,
        writes=writes,
    )


T = TypeVar("T")


def _memo(cache: dict[Any, Any], key: Any, compute: Callable[[], T]) -> T:
    if key not in cache:
        cache[key] = compute()
    return cast("T", cache[key])


def figures_line(f: Figures, per_task: float | None = None) -> str:
    r, h = f.ci95["recall"], f.ci95["hit"]
    tokens = f"  tokens/task {per_task:,.0f}" if per_task is not None else ""
    return (
        f"recall {f.recall:.3f} ({r[0]:.2f}-{r[1]:.2f})  hit {f.hit:.3f} ({h[0]:.2f}-{h[1]:.2f})"
        f"{tokens}"
    )


def settings_text(s: HoloSettings) -> str:
    weights = ", ".join(f"{k} {v:g}" for k, v in s.weights.items() if v)
    fields = ", ".join(f"{k} {v}" for k, v in s.fields.items())
    search = f"top_k {s.top_k}" if s.max_tokens is None else f"fill {s.max_tokens:,} tokens"
    if s.max_tokens is not None and s.top_k is not None:
        search += f", at most {s.top_k} tools"
    threshold = "never refuses" if s.threshold is None else f"refuses below {s.threshold:.3f}"
    return (
        f"signals {weights or 'none'}; fields {fields}; {search}; {threshold}"
        f"{'; names first' if s.name_first else ''}"
    )


def human(
    serve: Serve,
    report: ServeTuneReport,
    ws: Workspace,
    runtime: RuntimeInfo,
    *,
    forced: bool = False,
) -> str:
    fit = report.fit
    embedder = ws.embedder.spec if ws.embedder.embedder is not None else "none (lexical only)"
    out = [
        f"{ws.agent.name}: {fit.heldout.cases} cases, {len(ws.catalog)} tools, {fit.folds}-fold; "
        f"{runtime.line()}",
        "engine    holo-tune's own (serve runs it): every figure held out, each fold fitted "
        "on the others",
        f"embedder  {embedder}",
        f"bill      per task: pins + search_tools + call_tool, then the same with the search's "
        f"answer ({report.fixed:,} tokens besides the answer)",
        f"budget    {_budget_text(report)}",
        f"{report.verdict.label}  {settings_text(report.settings)}",
        f"  held-out  {figures_line(fit.heldout, report.mean(report.heldout, 'tokens'))}",
        f"  in-sample {figures_line(fit.insample)}",
        f"  gap       recall {fit.gap['recall']:+.3f}  hit {fit.gap['hit']:+.3f}",
        *_signal_lines(report),
        *_no_answer_lines(report),
        f"now       {_now_text(report)}: recall {report.mean(report.now, 'recall'):.3f}  "
        f"hit {report.mean(report.now, 'hit'):.3f}  tokens/task "
        f"{report.mean(report.now, 'tokens'):,.0f}",
        *report.verdict.lines(),
    ]
    if forced or not report.verdict.kept:
        path = serve.settings_path(ws)
        out.append(
            f"serve     holo-tune serve {ws.agent.path} --settings {path.name}  "
            f"(--apply writes {path.name} and the client's entry)"
        )
    else:
        out.append(
            f"serve     nothing to write: the verdict is {report.verdict.kind} (--apply writes "
            "nothing; --apply --force writes the fitted settings)"
        )
    return "\n".join(out) + "\n"


def _budget_text(report: ServeTuneReport) -> str:
    target = report.target
    if target.max_tokens is None:
        return (
            f"none given: {target.top_k} tools a search (serve's default; --max-tokens fills one)"
        )
    return (
        f"{report.budget.limit(report.tokens_all):,.0f} tokens per task: each search fills "
        f"{target.max_tokens:,} tokens of answer"
    )


def _signal_lines(report: ServeTuneReport) -> list[str]:
    out = []
    for s in report.fit.signals:
        if s.lift is None and not s.kept:
            continue
        lift = "" if s.lift is None else f" (lift {s.lift:+.3f})"
        out.append(f"  {'kept' if s.kept else 'left'}  {s.signal}{lift}: {s.why}")
    return out


def _no_answer_lines(report: ServeTuneReport) -> list[str]:
    na = report.fit.no_answer
    if na is None or na.cases == 0:
        return []
    if na.note:
        return [f"no answer {na.cases} cases expect no tool: {na.note}"]
    return [
        f"no answer {na.refused} of {na.cases} refused held out; {na.answerable_refused} of "
        f"{na.answerable} answerable cases wrongly refused"
    ]


def _now_text(report: ServeTuneReport) -> str:
    if report.current == HoloSettings(embedder=report.current.embedder):
        return "serve's defaults"
    return "serve as configured"
