"""The command line: ``holo-tune AGENT.yaml`` opens the dashboard; subcommands run headless.

The argument surface is the stable contract of docs/design.md ("Command line"). Each
subcommand's work lives in ``workbench.commands.<name>.run(args) -> int``; this module only
parses and dispatches, and turns every :class:`~workbench.errors.HoloTuneError` into one line on
stderr and its exit code; Ctrl-C is one line ``holo-tune: interrupted`` and exit code 130; any
other exception is a bug: one line ``internal error: ...`` and exit code 3 (``--debug``: the
traceback).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import math
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from workbench import __version__, startup
from workbench.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, HoloTuneError, internal_error_line
from workbench.runtimes import all_runtimes, runtime_names, searching_runtimes
from workbench.search.flags import add_serve_flags

PROG = "holo-tune"

COMMANDS: dict[str, str] = {
    "tools": "list the agent's tools with their token counts",
    "snapshot": "save the enumerated catalog to a JSON file",
    "search": "rank the tools for a query as the runtime would",
    "export": "print the tool_filtering block (or the runtime's tool configuration)",
    "apply": "write the tool_filtering block back into the agent YAML",
    "eval": "measure a setting on labelled queries",
    "tune": "propose the best setting within a token budget",
    "check": "list what the runtime will do differently from what the config suggests",
    "compare": "compare tool-search engines on labelled queries",
    "cases": "make cases: 'cases generate' asks a chat model for queries per tool, 'cases "
    "from-log' learns them from serve's usage log",
    "serve": "serve the tuned search to any MCP client (search_tools + call_tool, a proxy)",
}


class EngineChoices:
    """``eval --engine``'s choices: ``holodeck`` (HoloDeck's filter, with the setting flags) and
    every engine of the registry (:mod:`workbench.search.strategies.registry`), read when first
    asked: building the parser, and so ``--help`` of any command, imports no engine."""

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    @staticmethod
    def names() -> tuple[str, ...]:
        from workbench.search.strategies.registry import names  # the engines' imports are slow

        return ("holodeck", *names())


APPLY_EPILOG = (
    "Only the tool_filtering block changes; every other byte stays. Keys the block has keep "
    "their place and comments; a missing key is added only when its value is not HoloDeck's "
    "default; a flow-style block stays flow; a file without a block gets it appended after one "
    "blank line. The diff goes to stdout (--dry-run | patch works), warnings and status to "
    "stderr. Refused, file untouched (exit 2): out-of-range values, a file changed since it "
    "was read, a file that does not load, and a runtime that does not read the block "
    "({unread}; --force writes it anyway). An anthropic model on HoloDeck 0.6 is warned about, "
    "then written."
)


def apply_epilog() -> str:
    unread = ", ".join(r.name for r in all_runtimes() if not r.reads_tool_filtering)
    return APPLY_EPILOG.format(unread=unread)


def export_epilog() -> str:
    """What ``export`` prints for each runtime (each runtime says what it writes)."""
    return "By runtime: " + "; ".join(f"{r.name}: {r.writes}" for r in all_runtimes()) + "."


def fixes_help() -> str:
    """``check --write-fixes``: what each runtime that writes fixes of its own writes."""
    said = "; ".join(f"{r.name}: {r.fixes}" for r in all_runtimes() if r.fixes)
    return (
        "write the fixes the findings list that the runtime writes into its own configuration, "
        f"each measured held-out on the cases ({said or 'none yet'}); diff, backup"
    )


CASES_EPILOG = (
    "Sent: holo-tune's own prompt and the tools' names, servers, descriptions and parameter "
    "names; never the agent's instructions, an environment value or a key. OPENAI_BASE_URL "
    "and OPENAI_API_KEY reach any OpenAI-compatible server. Answers are cached (a re-run "
    "sends nothing); generated cases are marked 'source: generated' and replace those of an "
    "earlier run, hand labels stay. from-log: a tool called after a search that returned it "
    "labels that search's query (same client session, else --window); cases are marked "
    "'source: log' with their 'count' and replace those of an earlier run, every other case "
    "stays as it is."
)


SERVE_EPILOG = (
    "Lists the pinned tools, search_tools(query) and call_tool(name, arguments) (FastMCP's "
    "names). search_tools answers with holo-tune's own engine under --settings and the flags "
    "over it, as 'holo-tune search AGENT QUERY --runtime serve' shows: the tools, best first, "
    "as full definitions, or 'no tool fits' when the confidence is below the threshold; "
    "'select:NAME[,NAME]' returns exactly those tools. Without --settings: the engine's "
    "defaults (the dense signal when an embedder runs: --embedder, else the agent's). The "
    "agent's tool_filtering block is HoloDeck's and is not read. call_tool forwards to the MCP "
    "server that owns the tool "
    "(one session per server, kept open; --timeout bounds every call, else each entry's "
    "request_timeout). A server that fails is said on stderr and the others serve; a dead one "
    "is started again on the next call. HTTP: streamable HTTP at http://HOST:PORT/mcp "
    "(stateless: any replica answers any request), with /healthz, /readyz and /metrics "
    "(Prometheus); SIGTERM drains (the requests in flight finish, new ones get 503), then stops "
    "the servers. Logs: "
    "stderr and serve.log under $XDG_CACHE_HOME/holo-tune/logs (never stdout)."
)


def _port(text: str) -> int:
    """A TCP port, 1-65535 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line with exit code 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse type: a bad one is a usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text}")
    return value


class _StoreGiven(argparse.Action):
    """Stores the value and notes that the user gave the flag (``<dest>_given``), so that a
    message names a flag only when the user passed it (``--folds``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _folds_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--folds",
        type=int,
        default=5,
        metavar="K",
        action=_StoreGiven,
        help="k of k-fold (default 5)",
    )


def _common(p: argparse.ArgumentParser, *, catalog: bool = True, embedder: bool = False) -> None:
    p.add_argument("agent", metavar="AGENT.yaml", help="the HoloDeck agent config")
    p.add_argument(
        "--runtime",
        choices=runtime_names(),
        help="what runs the agent (default: detected from the installed holodeck-ai, a pin "
        "beside the agent, then the YAML; docs/runtimes.md)",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an internal error (a bug) instead of its one-line summary",
    )
    if catalog:
        p.add_argument(
            "--catalog",
            metavar="FILE",
            help="a catalog snapshot standing in for the agent's MCP servers (no process started)",
        )
        p.add_argument(
            "--timeout",
            type=_seconds,
            metavar="SECONDS",
            help="per-server listing timeout (default: each entry's request_timeout)",
        )
    if embedder:
        p.add_argument(
            "--embedder",
            metavar="SPEC",
            help="openai:MODEL, azure_openai:DEPLOYMENT, ollama:MODEL, local:NAME_OR_PATH or none "
            "(default: $HOLO_TUNE_EMBEDDER, else what the runtime would use)",
        )


CASES_HELP = (
    "labelled queries, YAML or JSON Lines (default: the agent's test_cases with expected_tools, "
    "else AGENT.cases.yaml beside the agent)"
)


def _cases_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", metavar="FILE", help=CASES_HELP)


def _llm_flag(p: argparse.ArgumentParser, where: str) -> None:
    p.add_argument(
        "--llm",
        metavar="SPEC",
        help=f"{where}: search with the query this chat model writes for each case "
        "(openai:MODEL, azure_openai:DEPLOYMENT or ollama:MODEL; cached), not the message itself",
    )


def _setting_flags(p: argparse.ArgumentParser, *, enabled: bool = True) -> None:
    g = p.add_argument_group(
        "setting (unset flags take the YAML's block, then HoloDeck's defaults)"
    )
    g.add_argument("--method", choices=["semantic", "bm25", "hybrid"], help="search_method")
    g.add_argument("--top-k", type=int, metavar="K", help="top_k (1-50)")
    g.add_argument("--threshold", type=float, metavar="T", help="similarity_threshold (0-1)")
    g.add_argument(
        "--always-include",
        action="append",
        metavar="NAME",
        help="always_include entry (repeatable; replaces the YAML's list)",
    )
    g.add_argument(
        "--always-include-file",
        metavar="FILE",
        help="always_include entries from a file: one name a line, or a tuner's --json output "
        "(with --always-include: both; replaces the YAML's list)",
    )
    g.add_argument(
        "--no-always-include",
        action="store_true",
        help="an empty always_include (the YAML's list is not read)",
    )
    g.add_argument("--top-n-used", type=int, metavar="N", help="always_include_top_n_used (0-20)")
    if not enabled:
        return
    g.add_argument(
        "--enabled",
        choices=["true", "false"],
        help="enabled (default: the YAML's value; export/apply: true if the file has no block)",
    )


SETTINGS_HELP = (
    "holo-tune's engine settings (serve's search), JSON: what tune --runtime serve --json "
    "prints, whole or its settings object (default: the engine's defaults)"
)
BUDGET_HELP = "the most tool tokens one search returns (without --top-k the budget alone decides)"


def _engine_flags(p: argparse.ArgumentParser) -> None:
    """``--settings`` and ``--max-tokens`` on a command that ranks (``search``, ``eval``): read
    where the runtime searches with holo-tune's engine (``--runtime serve``)."""
    g = p.add_argument_group(
        "holo-tune's engine (--runtime serve: --settings FILE, then --top-k, --max-tokens, "
        "--threshold, --method and --always-include over it, as serve reads them)"
    )
    g.add_argument("--settings", metavar="FILE", help=SETTINGS_HELP)
    g.add_argument("--max-tokens", type=int, metavar="N", help=BUDGET_HELP)


def _serve_flags(p: argparse.ArgumentParser) -> None:
    add_serve_flags(p, SETTINGS_HELP, BUDGET_HELP)


def _partial_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="go on when some servers fail, with the others' tools (each failure is said on "
        "stderr); without it a failed server stops the command (exit 2)",
    )


def _what_if_flags(p: argparse.ArgumentParser, *, usage: bool = True) -> None:
    if usage:
        p.add_argument(
            "--usage",
            metavar="FILE",
            help="tool usage counts (JSON) of a warm runtime: measures the warm-runtime what-if",
        )
    p.add_argument(
        "--no-what-if",
        action="store_true",
        help="skip the what-if rows (changes outside the block, each a held-out tuning run)",
    )


Parsers = tuple[
    argparse.ArgumentParser, argparse.ArgumentParser, dict[str, argparse.ArgumentParser]
]


def build_parser() -> Parsers:
    """The dashboard parser, the subcommand parser (for --help) and each subcommand's parser."""
    tui = _Parser(
        prog=PROG,
        description="Tune the tool filtering of a HoloDeck agent. "
        f"Subcommands: {', '.join(COMMANDS)} (holo-tune COMMAND --help).",
    )
    tui.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _common(tui, embedder=True)
    tui.add_argument("--usage", metavar="FILE", help="tool usage counts (JSON) for a warm runtime")
    tui.add_argument(
        "--cases",
        metavar="FILE",
        help="where labels are saved and what Evaluate runs (default: the agent's test_cases, "
        "else AGENT.cases.yaml beside the agent)",
    )

    cmd = _Parser(prog=PROG)
    cmd.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = cmd.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("tools", help=COMMANDS["tools"], description=COMMANDS["tools"])
    _common(p)
    p.add_argument("--json", action="store_true", help="print JSON (docs/json.md)")

    p = sub.add_parser("snapshot", help=COMMANDS["snapshot"], description=COMMANDS["snapshot"])
    _common(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write")

    p = sub.add_parser("search", help=COMMANDS["search"], description=COMMANDS["search"])
    _common(p, embedder=True)
    _partial_flag(p)
    # Not a mutually exclusive group: argparse cannot intermix options with a positional in one.
    p.add_argument("query", nargs="?", metavar="QUERY", help="the user message")
    p.add_argument("--queries", metavar="FILE", help="a file of queries, one a line (or QUERY)")
    _setting_flags(p)
    p.add_argument(
        "--variant",
        choices=["bm25", "regex"],
        help="a runtime that searches with its own engine: its variant (default bm25); such a "
        "runtime shows its search's results in its order, --top-k as its results per search and "
        "--always-include as its pinned tools",
    )
    _engine_flags(p)
    p.add_argument("--limit", type=int, metavar="N", help="show the first N of the ranking")
    p.add_argument("--usage", metavar="FILE", help="tool usage counts (JSON) for a warm runtime")
    p.add_argument("--json", action="store_true", help="print JSON (docs/json.md)")

    p = sub.add_parser(
        "export", help=COMMANDS["export"], description=COMMANDS["export"], epilog=export_epilog()
    )
    _common(p)
    _partial_flag(p)
    _setting_flags(p)
    g = p.add_argument_group(
        f"deferred-loading runtimes (--runtime {', '.join(searching_runtimes())})"
    )
    g.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="NAME",
        help="a tool kept loaded, full or bare name (repeatable); every other tool is deferred",
    )
    g.add_argument(
        "--keep-file",
        metavar="FILE",
        help="tools kept loaded, from a file: one name a line, or a tuner's --json output",
    )
    g.add_argument(
        "--variant",
        choices=["bm25", "regex"],
        default="bm25",
        help="the search variant, where the runtime has two (default bm25)",
    )
    g.add_argument(
        "--max-results",
        type=int,
        metavar="N",
        help="results per search, where the runtime's configuration sets it (default: its own)",
    )

    p = sub.add_parser(
        "apply", help=COMMANDS["apply"], description=COMMANDS["apply"], epilog=apply_epilog()
    )
    _common(p)
    _setting_flags(p)
    p.add_argument("--dry-run", action="store_true", help="show the diff, write nothing")
    p.add_argument("--no-backup", action="store_true", help="do not keep AGENT.yaml.bak")
    p.add_argument(
        "--cases",
        metavar="FILE",
        help="labelled cases: the new setting and the file's are measured on them, and a "
        "setting measured worse is refused (--force writes it)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write even a block the runtime would refuse, or a setting measured worse than "
        "the file's on --cases",
    )

    p = sub.add_parser("eval", help=COMMANDS["eval"], description=COMMANDS["eval"])
    _common(p, embedder=True)
    _partial_flag(p)
    _cases_flag(p)
    _setting_flags(p)
    g = p.add_argument_group("another engine (docs/strategies.md)")
    g.add_argument(
        "--engine",
        choices=EngineChoices(),
        default="holodeck",
        metavar="NAME",
        help="the tool-search design to measure: %(choices)s (default: holodeck, with the "
        "setting flags)",
    )
    g.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter of --engine (repeatable), e.g. alpha=0.3, keep_tools=a,b, "
        "server_defer=memory:false",
    )
    _llm_flag(p, "--engine anthropic")
    _engine_flags(p)
    p.add_argument("--min-recall", type=float, metavar="R", help="exit 1 if recall < R")
    p.add_argument("--json", action="store_true", help="print JSON (docs/json.md)")

    p = sub.add_parser(
        "tune",
        help=COMMANDS["tune"],
        description=COMMANDS["tune"],
        epilog="--apply, by runtime: "
        + "; ".join(f"{r.name}: {r.writes}" for r in all_runtimes())
        + ".",
    )
    _common(p, embedder=True)
    _partial_flag(p)
    _cases_flag(p)
    p.add_argument("--max-tokens", type=int, metavar="N", help="budget: mean tokens sent")
    p.add_argument("--min-reduction", type=float, metavar="R", help="budget: token reduction")
    p.add_argument(
        "--min-hit",
        type=float,
        metavar="H",
        help="allowlist and deferred runtimes: the fewest tokens with held-in hit >= H",
    )
    p.add_argument(
        "--usage",
        metavar="FILE",
        help="tool usage counts (JSON): hot tools first; measures the warm-runtime what-if",
    )
    _folds_flag(p)
    p.add_argument(
        "--apply",
        action="store_true",
        help="write the proposal where the runtime reads it (diff first, a backup): "
        "the epilog says what, by runtime",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with --apply: write even what the runtime refuses, or a proposal measured worse "
        "than the current setting",
    )
    _what_if_flags(p, usage=False)
    _llm_flag(p, f"--runtime {' or '.join(searching_runtimes())}")
    p.add_argument("--json", action="store_true", help="print JSON (docs/json.md)")
    _runtime_options(p, "tune")

    p = sub.add_parser("check", help=COMMANDS["check"], description=COMMANDS["check"])
    _common(p, embedder=True)
    _partial_flag(p)
    _cases_flag(p)
    _setting_flags(p)
    _folds_flag(p)
    _what_if_flags(p)
    p.add_argument("--write-fixes", action="store_true", help=fixes_help())
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("compare", help=COMMANDS["compare"], description=COMMANDS["compare"])
    _common(p, embedder=True)
    _partial_flag(p)
    _cases_flag(p)
    p.add_argument(
        "--runtimes",
        action="store_true",
        help=f"every runtime ({', '.join(runtime_names())}) tuned on the cases, held-out, "
        "with 95%% error bars and a plot (see --max-tokens)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="with --runtimes: every runtime tuned within N tool tokens per task (without: "
        "each runtime's front and a table at three budgets)",
    )
    _llm_flag(p, "with --runtimes, the deferred-loading rows")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "cases", help=COMMANDS["cases"], description=COMMANDS["cases"], epilog=CASES_EPILOG
    )
    p.add_argument(
        "action",
        choices=["generate", "from-log"],
        help="generate: queries from a chat model; from-log: from serve's usage log",
    )
    _common(p)
    p.add_argument(
        "logs",
        nargs="*",
        metavar="LOG",
        help="from-log: serve's usage log files (serve --usage-log; rotated files too)",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="the cases file (default: AGENT.cases.yaml)"
    )
    p.add_argument(
        "--per-tool", type=int, default=3, metavar="N", help="queries per tool (default 3)"
    )
    p.add_argument(
        "--llm",
        metavar="SPEC",
        help="openai:MODEL, azure_openai:DEPLOYMENT or ollama:MODEL (default: the agent's model)",
    )
    p.add_argument("--tools", metavar="GLOB", help="only the tools matching this glob")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="sampling seed (default 0)")
    _from_log_flags(p)

    p = sub.add_parser(
        "serve", help=COMMANDS["serve"], description=COMMANDS["serve"], epilog=SERVE_EPILOG
    )
    _common(p, embedder=True)
    _serve_flags(p)
    _usage_log_flags(p)
    p.add_argument(
        "--servers",
        metavar="FILE",
        help="the MCP servers to front: FILE's tools list, in place of the agent's own MCP "
        "entries (what a HoloDeck 0.7 agent pointed at serve by holo-tune runs)",
    )
    p.add_argument(
        "--live-calls",
        action="store_true",
        help="with --catalog: start the agent's MCP servers for call_tool; search stays on the "
        "snapshot (a replica lists and embeds nothing to answer, the servers start beside it)",
    )
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio", help="default stdio")
    p.add_argument(
        "--ready-needs",
        metavar="SERVER[,SERVER]",
        help="http: /readyz answers 503 while one of these MCP servers is down (default: "
        "ready once the index is loaded, whichever servers are up)",
    )
    p.add_argument("--host", default="127.0.0.1", help="http: the address (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="http: the port (default 8000)")
    return tui, cmd, dict(sub.choices)


def _dispatch(args: argparse.Namespace) -> int:
    name = args.command or "dashboard"
    module = importlib.import_module(f"workbench.commands.{name}")
    if name != "serve":  # serve's start ends once its index is built (serve.app)
        startup.loaded()
    run: Callable[[argparse.Namespace], int] = module.run
    return run(args)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse a command line; options may come before, between or after the positionals.

    Usage errors exit 2 with one line (argparse's SystemExit).
    """
    argv = list(argv)
    tui, _, commands = build_parser()
    if argv and argv[0] in commands:
        parser = commands[argv[0]]
        args = parser.parse_intermixed_args(argv[1:])
        args.command = argv[0]
        if args.command == "search" and (args.query is None) == (args.queries is None):
            parser.error("give one of QUERY and --queries FILE")
        return args
    if argv and _looks_like_a_command(argv[0]):
        close = difflib.get_close_matches(argv[0], list(commands), n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else f"commands: {', '.join(commands)}"
        tui.error(f"'{argv[0]}' is neither a command nor an agent file; {hint}")
    args = tui.parse_intermixed_args(argv)
    args.command = None
    return args


def _looks_like_a_command(word: str) -> bool:
    """A first word that is no option, no existing path and no YAML name: a mistyped command
    (``holo-tune tool agent.yaml``) rather than an agent file that is missing."""
    if word.startswith("-") or Path(word).exists():
        return False
    return Path(word).suffix.lower() not in (".yaml", ".yml") and "/" not in word


def _interrupted() -> int:
    print(f"{PROG}: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    finally:
        startup.loaded()  # if the start did not end (a usage error, a command that failed)


def _main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    try:
        return _dispatch(args)
    except HoloTuneError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:  # Ctrl-C: one line; MCP servers are stopped as their contexts exit
        return _interrupted()
    except BrokenPipeError:
        return 0
    except Exception as err:  # a bug: one line (exit 3), the traceback only when asked for
        if getattr(args, "debug", False):
            traceback.print_exc()
        else:
            print(f"{PROG}: {internal_error_line(err)}", file=sys.stderr)
        return EXIT_INTERNAL
    except BaseExceptionGroup as group:  # Ctrl-C inside a task group (listing the servers)
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        return _interrupted()


if __name__ == "__main__":
    sys.exit(main())


def _runtime_options(p: argparse.ArgumentParser, command: str) -> None:
    """The flags runtimes declare for ``command`` (:attr:`~workbench.runtimes.base.Runtime.
    options`)."""
    for runtime in all_runtimes():
        for option in runtime.options:
            if option.command == command:
                p.add_argument(option.flag, metavar=option.metavar, help=option.help)


def _megabytes(text: str) -> float:
    """A size in MB >= 0 (argparse type: 0 turns rotation off)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size in MB, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a size in MB >= 0, got {text}")
    return value


def _count(text: str) -> int:
    """A whole number >= 0 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _from_log_flags(p: argparse.ArgumentParser) -> None:
    """``cases from-log``'s own flags."""
    g = p.add_argument_group("from-log")
    g.add_argument(
        "--window",
        type=_seconds,
        metavar="SECONDS",
        help="a call with no client session pairing it to a search labels the latest search "
        "that returned its tool within SECONDS before it (default 60)",
    )
    g.add_argument(
        "--usage-out",
        metavar="FILE",
        help="also write the calls per tool as a usage file (JSON) for --usage",
    )


def _usage_log_flags(p: argparse.ArgumentParser) -> None:
    """serve's usage log (docs/serve.md): what ``cases from-log`` learns from."""
    g = p.add_argument_group("usage log (holo-tune cases from-log learns cases from it)")
    g.add_argument(
        "--usage-log",
        metavar="FILE",
        help="write each search (query, tools returned with their scores) and each call (tool, "
        "outcome, latency) to FILE as JSON Lines; no argument values, headers or secrets",
    )
    g.add_argument(
        "--usage-log-max-mb",
        type=_megabytes,
        metavar="MB",
        help="rotate FILE when it would grow past MB (FILE.1, FILE.2, ...; default 10; 0: "
        "never, for an outside logrotate: a moved FILE is opened anew)",
    )
    g.add_argument(
        "--usage-log-keep",
        type=_count,
        metavar="N",
        help="rotated files kept (default 5)",
    )
    g.add_argument(
        "--log-arguments",
        action="store_true",
        help="also write each call's arguments (the servers' env and header values hidden)",
    )
