"""One comparison computed once: a test file that runs ``compare --runtimes`` twice on the very
same inputs (its JSON, then its text) gets the second report from the first run.

:func:`runtimes_once` wraps :func:`workbench.runtimes.compare.compare_runtimes` where a module
calls it. A call is the same as an earlier one only when every input is: the workspace's agent
(less pytest's ``PYTEST_CURRENT_TEST`` in the environment it keeps) and catalog and the cases
compare equal, the token table holds the same counts, the engine is of the same kind with the
same embedder, and the keywords (budget, runtimes, folds, queries, registry) are equal; anything
else is computed. Nothing is shared between two different calls
(not even the tuners' cache), so a check that two calls agree still compares two computations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest

from workbench.config import AgentConfig
from workbench.evaluate.runtimes import RuntimesReport
from workbench.runtimes.compare import compare_runtimes
from workbench.tokens import TokenTable
from workbench.workspace import Workspace

#: What a call's output depends on besides its arguments: the progress callbacks are left out.
_CALLBACKS = ("on_runtime", "on_progress")


def _tokens(tokens: TokenTable) -> tuple[Any, ...]:
    counts = tokens.per_tool.tobytes()
    return (tokens.encoding, tokens.exact, tokens.model, counts, tokens.overhead, tokens.note)


def _agent(agent: AgentConfig) -> AgentConfig:
    """The agent as loaded, less pytest's own note of the test running (``PYTEST_CURRENT_TEST``,
    in the environment the agent keeps for ``${VAR}``): it differs from test to test."""
    env = {k: v for k, v in agent.env.items() if k != "PYTEST_CURRENT_TEST"}
    return dataclasses.replace(agent, env=env)


def _engine(engine: Any) -> tuple[Any, ...]:
    return (type(engine), repr(getattr(engine, "embedder", None)))


@contextmanager
def runtimes_once(module: ModuleType) -> Iterator[None]:
    """``module.compare_runtimes`` answers a call the same as an earlier one with that call's
    report, while the context lasts."""
    seen: list[tuple[tuple[Any, ...], dict[str, Any], tuple[Any, ...], RuntimesReport]] = []

    def once(ws: Workspace, cases: Any, **kwargs: Any) -> RuntimesReport:
        inputs = (_agent(ws.agent), ws.catalog, cases)
        keys = {k: v for k, v in kwargs.items() if k not in _CALLBACKS}
        prints = (_engine(ws.engine), _tokens(ws.tokens))
        for old_inputs, old_keys, old_prints, report in seen:
            if old_keys == keys and old_prints == prints and old_inputs == inputs:
                return report
        report = compare_runtimes(ws, cases, **kwargs)
        seen.append((inputs, keys, prints, report))
        return report

    call: Callable[..., RuntimesReport] = once
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "compare_runtimes", call)
        yield
