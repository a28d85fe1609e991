"""What the CLI commands share: setting flags, output helpers."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import ValidationError

from workbench.catalog.enumerate import load_catalog
from workbench.catalog.models import Catalog, CatalogView, ServerStatus
from workbench.config import AgentConfig, load_agent
from workbench.config.filtering import ToolFiltering
from workbench.config.namesfile import read_names
from workbench.config.notices import warnings_to_say
from workbench.config.validation import problems
from workbench.errors import InputError, ServersFailed, WriteBackError
from workbench.progress import ProgressLine
from workbench.runtimes.detect import Change, RuntimeInfo, check_writable, detect_runtime
from workbench.search.selection import match_always_include

if TYPE_CHECKING:
    from workbench.evaluate.cases import CaseSet
    from workbench.evaluate.search_queries import SearchQueries
    from workbench.evaluate.verdict import Verdict
    from workbench.workspace import Workspace

#: Fallback notes of ``--llm`` printed before "... and N more".
NOTES_SHOWN = 10


def setting_from_args(args: argparse.Namespace, base: ToolFiltering | None) -> ToolFiltering:
    """The setting the flags ask for; unset flags keep ``base`` (the file's block) or defaults."""
    changes: dict[str, Any] = {}
    if getattr(args, "method", None) is not None:
        changes["search_method"] = args.method
    if getattr(args, "top_k", None) is not None:
        changes["top_k"] = args.top_k
    if getattr(args, "threshold", None) is not None:
        changes["similarity_threshold"] = args.threshold
    always = list(getattr(args, "always_include", None) or [])
    if getattr(args, "always_include_file", None):
        always += read_names(args.always_include_file, "--always-include-file")
    if getattr(args, "always_include", None) is not None or always:
        changes["always_include"] = list(dict.fromkeys(always))
    elif getattr(args, "no_always_include", False):
        changes["always_include"] = []
    if getattr(args, "top_n_used", None) is not None:
        changes["always_include_top_n_used"] = args.top_n_used
    if getattr(args, "enabled", None) is not None:
        changes["enabled"] = args.enabled == "true"
    try:
        return (base or ToolFiltering()).with_(**changes)
    except ValidationError as err:
        first = problems(ToolFiltering, err.errors())[0]
        flag = _FLAG_OF.get(str(first.path[0]) if first.path else "", "setting")
        raise InputError(first.message, field=flag) from None


_FLAG_OF = {
    "search_method": "--method",
    "top_k": "--top-k",
    "similarity_threshold": "--threshold",
    "always_include": "--always-include",
    "always_include_top_n_used": "--top-n-used",
    "enabled": "--enabled",
}


def warn(message: str, stream: TextIO | None = None) -> None:
    """One warning line on stderr, named like the error lines: ``holo-tune: warning: ...``."""
    print(f"holo-tune: warning: {message}", file=stream if stream is not None else sys.stderr)


def warn_unmatched(setting: ToolFiltering, catalog: Catalog) -> None:
    """An ``always_include`` entry that names no tool of the catalog (the runtime ignores it)."""
    for entry in setting.always_include:
        if match_always_include(catalog, entry) is None:
            warn(f"always_include entry {entry!r} matches no tool: the runtime ignores it")


def warn_catalog(catalog: Catalog, stream: TextIO | None = None) -> None:
    """The catalog's load-time warnings (a snapshot's servers the agent lacks) on stderr."""
    for warning in catalog.warnings:
        warn(warning, stream)


def failed_servers(catalog: Catalog) -> list[ServerStatus]:
    """The servers that were started and did not list their tools."""
    return [server for server in catalog.servers if server.state == "error"]


def report_failed(catalog: Catalog, stream: TextIO | None = None) -> None:
    """One warning line per server that failed, with why (its tools are not in the catalog)."""
    for server in failed_servers(catalog):
        warn(f"server {server.name} failed ({server.error}); its tools are left out", stream)


def refuse_partial(catalog: Catalog, *, allow_partial: bool) -> None:
    """Stop a command that ranks or measures on a catalog some servers are missing from (exit 2):
    always when no source answered at all; when some failed, unless ``--allow-partial``."""
    if catalog.servers and not any(server.ok for server in catalog.servers):
        raise ServersFailed("no server answered: there are no tools to rank")
    failed = [server.name for server in failed_servers(catalog)]
    if failed and not allow_partial:
        raise ServersFailed(
            f"{len(failed)} of {len(catalog.servers)} servers failed ({', '.join(failed)}): "
            "their tools would be missing from every figure; --allow-partial ranks the others"
        )


def open_catalog(
    args: argparse.Namespace,
    agent: AgentConfig,
    *,
    refuse: bool = True,
    stream: TextIO | None = None,
    view: CatalogView | None = None,
) -> Catalog:
    """The agent's catalog for a command (``--catalog``, ``--timeout``) as its runtime sees it
    (``view``, else the ``catalog_view`` of the runtime :func:`runtime_of` gives): the
    catalog's warnings and each failed server on stderr, then, with ``refuse``,
    :func:`refuse_partial` (``--allow-partial``). Every command that lists the servers goes
    through here."""
    catalog = load_catalog(
        agent,
        catalog_file=getattr(args, "catalog", None),
        timeout=getattr(args, "timeout", None),
        view=view or runtime_of(args, agent).plugin.catalog_view,
    )
    warn_catalog(catalog, stream)
    report_failed(catalog, stream)
    if refuse:
        refuse_partial(catalog, allow_partial=getattr(args, "allow_partial", False))
    return catalog


def agent_warnings(agent: AgentConfig, *, servers_start: bool = True) -> list[str]:
    """The loader's warnings a command says. When no server is started (``--catalog``), an
    unset ``${VAR}`` that only the MCP entries use is left out: nothing reads it."""
    return warnings_to_say(agent.warnings, agent.data, servers_start=servers_start)


def load_command_agent(
    args: argparse.Namespace, *, warnings: bool = True, stream: TextIO | None = None
) -> AgentConfig:
    """The agent of a command that lists its tools (a missing ``${VAR}`` is a warning: ranking
    needs the tools, not the servers' secrets; with ``warnings`` the loader's warnings on
    ``stream``). An agent that runs ``holo-tune serve`` is read with the servers serve fronts
    (:func:`~workbench.config.servers.as_fronted`), said on ``stream``."""
    from workbench.config.servers import as_fronted

    agent = load_agent(args.agent, missing_env="warn")
    if warnings:
        for warning in agent_warnings(agent, servers_start=not getattr(args, "catalog", None)):
            warn(warning, stream)
    agent, fronted = as_fronted(agent)
    if fronted is not None:
        warn(fronted, stream)
    return agent


def open_command_workspace(args: argparse.Namespace, *, agent_warnings: bool = True) -> Workspace:
    """The workspace of a command that ranks or measures: the agent (a missing ``${VAR}`` is a
    warning: ranking needs the tools, not the servers' secrets; with ``agent_warnings`` the
    loader's warnings on stderr), :func:`open_catalog`, then the tokens, embedder and engine."""
    from workbench.workspace import build_workspace

    agent = load_command_agent(args, warnings=agent_warnings)
    catalog = open_catalog(args, agent)
    return build_workspace(agent, catalog, embedder_spec=getattr(args, "embedder", None))


def use_color(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set."""
    stream = stream if stream is not None else sys.stdout
    return "NO_COLOR" not in os.environ and stream.isatty()


def print_json(obj: Any, *, stream: TextIO | None = None, lines: bool = False) -> None:
    """JSON to stdout: indented for a person, one line per object with ``lines``."""
    stream = stream if stream is not None else sys.stdout
    if lines:
        stream.write(json.dumps(obj, ensure_ascii=False) + "\n")
    else:
        stream.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def runtime_of(args: argparse.Namespace, agent: AgentConfig) -> RuntimeInfo:
    """The runtime ``--runtime`` names, else the one detected for ``agent`` (docs/runtimes.md)."""
    return detect_runtime(agent.path, agent.data, explicit=getattr(args, "runtime", None))


def with_runtime(obj: dict[str, Any], runtime: RuntimeInfo) -> dict[str, Any]:
    """A ``--json`` object with the runtime and why (every command's JSON says it)."""
    return {"runtime": runtime.to_json(), **obj}


def refuse_unwritable(runtime: RuntimeInfo, change: Change, *, force: bool) -> None:
    """Stop a write the runtime would not read (exit 2, nothing written) unless forced."""
    why = check_writable(runtime, change)
    if why is None:
        return
    if force:
        warn(f"{why.removeprefix('refused: ')} (--force: writing anyway)")
        return
    raise WriteBackError(f"{why}, or --force to write it anyway")


def apply_allowed(verdict: Verdict | None, *, force: bool, what: str = "the proposal") -> bool:
    """Whether ``--apply`` writes ``what`` under the tuner's verdict
    (:mod:`workbench.evaluate.verdict`). Measured worse than the current setting: refused, exit
    2, nothing written, unless ``--force``. Not recommended otherwise (``keep``, ``keep-all``):
    nothing written (one line on stderr), unless ``--force``."""
    if verdict is None:
        return True
    if verdict.worse:
        figures = verdict.worse_text()
        if force:
            warn(f"{what} is measured worse than the current setting: {figures} (--force: writing)")
            return True
        raise WriteBackError(
            f"refused: {what} is measured worse than the current setting: {figures}; nothing "
            "written (--force writes it anyway)"
        )
    if verdict.kept and not force:
        print(
            f"holo-tune: nothing written: the verdict is {verdict.kind} ({what} is not "
            "recommended; --force writes it anyway)",
            file=sys.stderr,
        )
        return False
    return True


def search_queries(args: argparse.Namespace, agent: AgentConfig, cases: CaseSet) -> SearchQueries:
    """What each case is searched as on a deferred-loading runtime: with ``--llm SPEC`` the search
    call that model writes for it (asked once, cached on disk; fallbacks warned), else the
    message itself."""
    from workbench.evaluate.chat import resolve_endpoint
    from workbench.evaluate.search_queries import MESSAGE, default_cache, write_search_queries

    spec = getattr(args, "llm", None)
    if spec is None:
        return MESSAGE
    endpoint = resolve_endpoint(spec, agent.agent.model, agent.env or None)
    messages = [case.query for case in cases.cases]
    print(
        f"holo-tune: asking {endpoint.spec} for the search call of {len(set(messages))} cases",
        file=sys.stderr,
    )
    with ProgressLine("search queries", quiet=getattr(args, "json", False)) as line:
        queries = write_search_queries(
            messages, endpoint, cache=default_cache(agent.env or None), on_progress=line
        )
    for note in queries.notes[:NOTES_SHOWN]:
        warn(note)
    if len(queries.notes) > NOTES_SHOWN:
        warn(f"... and {len(queries.notes) - NOTES_SHOWN} more fallbacks (--json lists them)")
    return queries
