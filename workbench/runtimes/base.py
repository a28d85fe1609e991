"""What a runtime is, in one place: the interface every runtime module implements.

A *runtime* is what reads the agent's tool setting and decides which tools a request carries:
HoloDeck 0.6's per-query ``tool_filtering``, HoloDeck 0.7's static allowlists, a provider's
search tool (Anthropic, Claude Code, OpenAI). Each is one module of :mod:`workbench.runtimes`
holding one :class:`Runtime` subclass; the registry (:mod:`workbench.runtimes.registry`) finds
them, and commands, ``check``, ``compare --runtimes`` and the dashboard ask the runtime instead of
testing its name.

A runtime says:

* **view**: how it sees the servers' listings (:attr:`Runtime.catalog_view`): as they are listed,
  or (HoloDeck 0.6) through Semantic Kernel's conversion; every catalog a command, the dashboard
  or serve builds for it is in that view;
* **detection**: :meth:`Runtime.detect` gives the evidence that it runs the agent (an installed
  package, a pin, a key of the YAML), strongest source first (:data:`SOURCES`);
* **knobs**: what its configuration reads (:attr:`Runtime.knobs`), with bounds and defaults;
* **bill**: how a task is billed, in words (:attr:`Runtime.billing`); the tuner's figures bill
  that way (a search round trip included where there is one);
* **engine**: which engine stands for its search, and whether it is exact (:attr:`Runtime.engine`);
* **tuner**: :meth:`Runtime.tune` (``tune --runtime``: a :class:`TuneRequest` -> a
  :class:`TuneOutcome`, the setting held-out, as data: commands print it and write it, and
  ``compare --runtimes`` reads its row, :attr:`TuneOutcome.row`);
* **writer**: :meth:`Runtime.refusal` (whether a change of the agent file suits it),
  :meth:`Runtime.export` (``export --runtime``) and, where the configuration is a file,
  a :class:`ConfigWrite` (a plan: the diff first, then an atomic write with a backup) that
  ``tune --apply`` and the dashboard's Write (:meth:`Runtime.dashboard_write`) both show and
  write (:attr:`Runtime.options` declares a flag naming the file where it is not beside the
  agent);
* **search**: :meth:`Runtime.search_ranker`, what ``search --runtime`` shows where the runtime
  ranks with a search of its own (by default HoloDeck's filter), and :meth:`Runtime.case_search`,
  what ``eval --runtime`` measures then;
* **findings**: :meth:`Runtime.findings`, what ``check`` says about the agent under this runtime;
  with labelled cases, :meth:`Runtime.case_findings` (what its own search cannot reach, and the
  fixes it measured) and :meth:`Runtime.write_fixes` (``check --write-fixes``: the fixes it can
  write into its own configuration, :attr:`Runtime.fixes` says which);
* **dashboard**: its words as data (:attr:`Runtime.words`: the header's reason, the knobs' note,
  what the write-back dialog says instead of writing), :attr:`Runtime.write_offer`, what its
  Write writes (:attr:`Runtime.config_file`, :meth:`Runtime.dashboard_write`) and what
  ``e`` shows (:meth:`Runtime.tool_config`).

Optional capabilities have defaults here; the abstract methods are the few every runtime must
answer. Nothing here imports Textual, and a runtime module imports its heavy parts inside its
methods, so that detecting a runtime stays cheap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog, CatalogView
    from workbench.config import AgentConfig
    from workbench.config.filtering import ToolFiltering
    from workbench.config.writeback.files import FilePlan
    from workbench.evaluate.cases import CaseSet
    from workbench.evaluate.diagnostics import Context, Finding
    from workbench.evaluate.metrics import Progress
    from workbench.evaluate.runtimes import RuntimeRow
    from workbench.evaluate.search_queries import SearchQueries
    from workbench.evaluate.verdict import Verdict
    from workbench.runtimes.detect import RuntimeInfo
    from workbench.search.flags import SearchFlags
    from workbench.search.holo.settings import HoloSettings
    from workbench.workspace import Workspace

#: Where the evidence for a runtime comes from, strongest first.
Source = Literal["flag", "installed", "pin", "yaml", "default"]
SOURCES: tuple[Source, ...] = ("flag", "installed", "pin", "yaml", "default")
#: What a write changes: the ``tool_filtering`` block, or HoloDeck 0.7's ``allowed_tools`` lists.
Change = Literal["tool_filtering", "allowlists"]


@dataclass(frozen=True, slots=True)
class RuntimeOption:
    """A flag of a runtime's own on one command (:attr:`Runtime.options`), declared as data:
    the command line adds it (``--NAME-...``, so that runtimes never clash) and the request
    carries its value under its name without the dashes (``pizzapi_config``)."""

    command: str
    flag: str
    metavar: str
    help: str

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True, slots=True)
class Knob:
    """One setting the runtime reads: its name as the runtime's configuration spells it, what it
    means, its default and its bounds (in words, for help and docs)."""

    name: str
    meaning: str
    default: str
    bounds: str = ""


@dataclass(frozen=True, slots=True)
class EngineNote:
    """Which engine stands for the runtime's search: ``exact`` when it reproduces the runtime's
    own code (a fidelity test holds it to it), else the closest approximation, said in ``text``."""

    name: str
    exact: bool
    text: str


@dataclass(frozen=True)
class RuntimeWords:
    """What the dashboard says of a runtime, as data (:attr:`Runtime.words`), each filled by
    one method here: the header's reason in a few words for evidence of each source
    (:attr:`reasons`; a source not listed says the evidence's own reason, ``--runtime`` says
    so), the knobs panel's note where it does not read them (:attr:`knobs`, filled with
    ``{name}``) and what the write-back dialog says to use instead of the block
    (:attr:`instead`, filled with ``{name}`` and ``{agent}``, the agent file's name)."""

    reasons: Mapping[str, str] = field(default_factory=dict)
    knobs: str = "{name} does not read these: it loads tools by its own search"
    instead: str = (
        "{name} reads its own tool configuration, not agent.yaml: ctrl+e shows it "
        "(as `holo-tune export {agent} --runtime {name}` prints it)."
    )

    def reason(self, info: RuntimeInfo) -> str:
        """Why the runtime was chosen, in a few words (the header; ``check`` prints the whole)."""
        if info.source == "flag":
            return "--runtime"
        return self.reasons.get(info.source, info.reason)

    def knobs_note(self, runtime: Runtime) -> str | None:
        """The knobs panel's note (None: the runtime reads the ``tool_filtering`` block)."""
        return None if runtime.reads_tool_filtering else self.knobs.format(name=runtime.name)

    def instead_line(self, name: str, agent: str) -> str:
        """What to use instead of writing the block, under the dialog's refusal."""
        return self.instead.format(name=name, agent=agent)


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a runtime is thought to run the agent, and how strong that is."""

    reason: str
    source: Source


@dataclass
class Probe:
    """What detection looks at: the agent's path, its parsed YAML and the installed packages
    (``installed``: the version of a distribution, None when absent). Expensive looks (pins in
    the folders above the agent) are made once and shared by every runtime."""

    agent_path: Path
    data: Mapping[str, Any] | None
    installed: Callable[[str], str | None]
    _memo: dict[str, Any] | None = None

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per probe (a cache shared by the runtimes that read it)."""
        if self._memo is None:
            self._memo = {}
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def folder(self) -> Path:
        return self.agent_path.resolve().parent


class Runtime(ABC):
    """One runtime: subclass it in a module of its own and list the module in the registry."""

    #: The ``--runtime`` value, as commands, JSON and the dashboard show it.
    name: ClassVar[str]
    #: For people: ``HoloDeck 0.6``.
    title: ClassVar[str]
    #: Its marker and colour in the runtime plots (the CLI's letters, the dashboard's colours).
    marker: ClassVar[tuple[str, str]] = ("?", "white")
    #: Whether it reads the agent's ``tool_filtering`` block (HoloDeck 0.4-0.6 only).
    reads_tool_filtering: ClassVar[bool] = False
    #: How it sees the servers' listings: as listed (their order, every tool, their own
    #: descriptions), or ``semantic-kernel`` (HoloDeck 0.6: Semantic Kernel's skips, stand-in
    #: descriptions and sorted order) (:mod:`workbench.catalog.build`).
    catalog_view: ClassVar[CatalogView] = "listed"
    #: Whether the model finds tools by calling a search tool (the query is the model's: --llm).
    searches: ClassVar[bool] = False
    #: Whether it ranks the block's methods with the embedder holo-tune is given (serve: it is
    #: given the same --embedder); otherwise semantic and hybrid run as the agent's embedding
    #: service allows: BM25 without one (HoloDeck's rule, workbench/search/delivery.py).
    runs_given_embedder: ClassVar[bool] = False
    #: Chosen when nothing says otherwise (one runtime of the registry).
    default: ClassVar[bool] = False
    #: Between two runtimes with evidence of the same source, the higher wins.
    detect_priority: ClassVar[int] = 0
    #: What its configuration reads.
    knobs: ClassVar[tuple[Knob, ...]] = ()
    #: The engine that stands for its search.
    engine: ClassVar[EngineNote]
    #: How one task is billed, in words.
    billing: ClassVar[str]
    #: What ``tune --runtime`` picks, and what ``--apply`` / ``export`` produce, in words.
    tunes: ClassVar[str]
    writes: ClassVar[str]
    #: The budget flags its tuner takes (``--max-tokens`` and ``--min-reduction`` are caps).
    budget_flags: ClassVar[frozenset[str]] = frozenset({"--max-tokens", "--min-reduction"})
    #: Flags of its own (PizzaPi's ``tune --pizzapi-config``): the CLI adds them, the request
    #: carries their values.
    options: ClassVar[tuple[RuntimeOption, ...]] = ()
    #: The write-back dialog's alternative to a refused block (None: none).
    write_offer: ClassVar[str | None] = None
    #: Its words, as data (the dashboard's; a search-tool runtime's tune report's too).
    words: ClassVar[RuntimeWords] = RuntimeWords()
    #: The file the dashboard's Write writes for it instead of the block, in words (None: its
    #: configuration lives in the user's code, or it reads the block: Write shows the export).
    config_file: ClassVar[str | None] = None
    #: What ``check --write-fixes`` writes for it, in words (None: no fix it writes itself).
    fixes: ClassVar[str | None] = None
    #: The engine the dashboard's query lab ranks with under it: ``holodeck`` (HoloDeck's filter
    #: under the knobs) or ``holo`` (holo-tune's own engine as serve runs it, under the knobs
    #: mapped by :func:`~workbench.search.holo.knobs.knob_settings`: each tool's score is shown
    #: split by signal).
    lab_engine: ClassVar[Literal["holodeck", "holo"]] = "holodeck"

    # ------------------------------------------------------------------------------ detection

    def detect(self, probe: Probe) -> Evidence | None:
        """The evidence that this runtime runs the agent (None: none)."""
        return None

    # ---------------------------------------------------------------------------------- tuner

    @abstractmethod
    def tune(self, request: TuneRequest) -> TuneOutcome:
        """``tune --runtime NAME``: the setting within the budget, held-out, as data: the
        report, its text and JSON, what to warn, and the writes ``--apply`` makes where the
        runtime's configuration is a file (:mod:`workbench.commands.tune` prints and writes),
        and its row of ``compare --runtimes`` (:attr:`TuneOutcome.row`, read by
        :mod:`workbench.runtimes.compare`)."""

    # --------------------------------------------------------------------------------- writer

    def refusal(self, info: RuntimeInfo, change: Change) -> str | None:
        """Why writing ``change`` into the agent YAML would not suit this runtime (None: it
        does): one line that says why and what to use instead."""
        return None

    @abstractmethod
    def export(self, request: ExportRequest) -> ToolConfig:
        """``export --runtime NAME``: what to give the runtime, as text with its warnings and
        advice (:mod:`workbench.commands.export` prints it; stdout holds only the text)."""

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig | None:
        """The runtime's own tool configuration with ``kept`` loaded (the dashboard's export),
        None when the agent file is the configuration (the block is shown instead)."""
        return None

    # --------------------------------------------------------------------------------- search

    def search_ranker(
        self, ws: Workspace, flags: SearchFlags, warn: Callable[[str], None]
    ) -> Callable[[str], SearchRanking] | None:
        """``search --runtime NAME`` when the runtime ranks with a search of its own: a function
        of the query, built once per command from the flags (None: HoloDeck's filter ranks and
        the block's setting selects, whatever the runtime). ``warn`` is told of a flag the
        search does not read."""
        return None

    def case_search(
        self, ws: Workspace, flags: SearchFlags, warn: Callable[[str], None]
    ) -> CaseSearch | None:
        """``eval --runtime NAME`` when the runtime's search is measured as it runs, built once
        from the flags (None: HoloDeck's filter, under the block's setting, is measured)."""
        return None

    # ------------------------------------------------------------------------------- findings

    def findings(self, ctx: Context) -> list[Finding]:
        """What ``check`` says about the agent because this runtime runs it."""
        return []

    def case_findings(
        self, ws: Workspace, cases: CaseSet, *, folds: int, what_if: bool, quiet: bool
    ) -> list[Finding]:
        """What ``check`` finds with labelled cases under the runtime's own search (asked only
        of a runtime that does not read the ``tool_filtering`` block: ``check`` measures the
        block's filter itself): tools the cases cannot reach and, with ``what_if``, fixes
        measured held-out on ``folds`` folds (``quiet``: no progress line). A fix the runtime
        can write carries what it writes in its evidence."""
        return []

    def fix_write(self, ws: Workspace, findings: list[Finding]) -> ConfigWrite | None:
        """``check --write-fixes``: the plan of the fixes among ``findings`` that the runtime
        writes into its own configuration (diff, backup, refused when the file changed since it
        was read); None when no finding carries such a fix."""
        return None

    # ------------------------------------------------------------------------------ dashboard

    def lab_base(self, agent_path: Path) -> HoloSettings | None:
        """With a lab engine of its own (:attr:`lab_engine` ``holo``): the engine's settings the
        knobs do not set (weights, fields, names first, what a search returns), as this runtime
        runs them now for the agent at ``agent_path``, so that the lab ranks as the runtime does
        and as its Write would write. None: the engine's defaults."""
        return None

    def dashboard_write(self, request: WriteRequest) -> ConfigWrite | None:
        """The dashboard's Write for a runtime with a :attr:`config_file`: the plan of that file
        for the knobs' setting (the tools ``always_include`` names are the ones kept loaded,
        exposed or pinned, as ``e`` shows them). Called in a worker thread (it may run the
        labelled cases); raises HoloTuneError with why nothing can be proposed. None: nothing
        to write (the export is shown instead)."""
        return None


@dataclass(frozen=True)
class WriteRequest:
    """What the dashboard's Write hands a runtime: the workspace, the knobs' setting, the
    labelled cases' file the dashboard was given (None: found beside the agent) and the usage
    counts (None: none)."""

    ws: Workspace
    setting: ToolFiltering
    cases: Path | None = None
    usage: Any = None


@dataclass(frozen=True)
class TuneRequest:
    """What ``tune`` asks of a runtime, read from the flags by :mod:`workbench.commands.tune`
    (a runtime reads no flag): the workspace and labelled cases, the budget as given
    (``max_tokens``, ``min_reduction``, ``min_hit``; none: the runtime's own rule), the folds,
    the usage counts' file, whether to measure the what-if rows, the search calls a model
    wrote for the cases (``--llm``; None: the messages are searched), whether ``--apply``
    (and ``--force``) asks for the writes, whether to keep quiet (``--json``: no progress
    line), and the values of the runtime's own options (:attr:`Runtime.options`, by name).

    ``compare --runtimes`` asks with three more (:mod:`workbench.runtimes.compare`): ``cache``,
    what a tuner keeps between calls on the same cases (its rankings and sweeps, by keys of its
    own: each runtime is tuned at several budgets); ``on_progress``, told ``(done, total)`` of
    the cases scored instead of a progress line of the tuner's own; and ``figures_only``: only
    the row is read (nothing is printed or written from this outcome), so a tuner may measure
    what it could not write (HoloDeck 0.7's allowlists with servers that are not the agent's
    entries, serve's neighbour signal with cases that are not a file)."""

    ws: Workspace
    cases: CaseSet
    info: RuntimeInfo
    max_tokens: int | None = None
    min_reduction: float | None = None
    min_hit: float | None = None
    folds: int = 5
    usage: str | None = None
    what_if: bool = True
    queries: SearchQueries | None = None
    apply: bool = False
    force: bool = False
    quiet: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    cache: dict[Any, Any] | None = field(default=None, compare=False, repr=False)
    on_progress: Progress | None = field(default=None, compare=False, repr=False)
    figures_only: bool = False

    def cap(self) -> int | None:
        """The token cap of ``max_tokens`` and ``min_reduction`` (the smaller when both are
        given; None when neither is), for the tuners whose budget is a cap."""
        from workbench.evaluate.budget import Budget

        given = Budget(max_tokens=self.max_tokens, min_reduction=self.min_reduction)
        return given.cap(self.ws.tokens.all)


@dataclass(frozen=True)
class Paste:
    """A configuration that lives in the user's code: what to tell them (stderr) and the text
    to paste (stdout, unless ``--json``)."""

    note: str
    text: str


@dataclass(frozen=True)
class TuneOutcome:
    """What a runtime's tuner found, as data (:meth:`Runtime.tune`): the ``report`` object,
    its ``text`` and its ``json`` (``tune --json``'s object without ``runtime``), its ``row``
    (the same figures as ``compare --runtimes`` and the dashboard's ``w`` show them: the
    setting in a few words, each case held out in fold order, within the request's budget or
    not, the current setting's row where the verdict keeps it), the ``notes``
    to warn before it, the ``verdict`` ``--apply`` obeys, the ``change`` a write makes to the
    agent file (checked against the runtime first), and ``writes``: the plans ``--apply``
    shows and writes, given whether ``--force`` was passed (a function, so that nothing is
    planned unless the verdict allows it), or ``paste`` where nothing can be written."""

    report: Any
    text: str
    json: dict[str, Any]
    row: RuntimeRow
    notes: tuple[str, ...] = ()
    verdict: Verdict | None = None
    change: Change | None = None
    writes: Callable[[bool], tuple[ConfigWrite, ...]] | None = None
    paste: Paste | None = None


@dataclass(frozen=True)
class ExportRequest:
    """What ``export`` asks of a runtime, read from the flags by
    :mod:`workbench.commands.export`: the agent, the block's setting the setting flags ask for,
    ``catalog()`` (a function, so that a runtime that exports no tool list starts no server),
    the tools ``--keep`` and ``--keep-file`` name (as written), the search ``variant`` and
    ``max_results`` when given."""

    agent: AgentConfig
    info: RuntimeInfo
    setting: ToolFiltering
    catalog: Callable[[], Catalog]
    keep: tuple[str, ...] = ()
    variant: str = "bm25"
    max_results: int | None = None


@dataclass(frozen=True)
class ConfigWrite:
    """A planned write of a runtime's configuration file: the file, the diff to show first and
    ``write`` (an atomic write that keeps a backup and is refused when the file changed since it
    was read: every writer goes through :func:`~workbench.config.writeback.files.apply_bytes`),
    which returns the backup's path (None: a new file). ``tune --apply`` prints it and writes
    (:func:`~workbench.commands.apply.show_config_write`); the dashboard's Write shows it in the
    write-back dialog. ``what`` names what is written (the dialog's title), ``written`` and
    ``unchanged`` end the CLI's status line, ``summary`` is what the dialog says above the diff;
    ``worse``: why the setting written is measured worse than what the runtime runs now on the
    labelled cases (:func:`~workbench.evaluate.verdict.worse_than_now`; None: not worse, or no
    cases): the dashboard's Write then asks a second confirmation."""

    path: Path
    diff: str
    changed: bool
    write: Callable[[], Path | None]
    what: str
    written: str
    unchanged: str
    warnings: tuple[str, ...] = ()
    summary: tuple[str, ...] = ()
    no_backup: str = "a new file"
    worse: str | None = None
    #: The file plans ``write`` applies (empty: unknown), so that a write joining several
    #: (serve's settings file and its client's entry) checks every file before writing any.
    plans: tuple[FilePlan, ...] = ()


@dataclass(frozen=True)
class CaseSearch:
    """What ``eval`` measures for a runtime that searches with an engine of its own
    (:meth:`Runtime.case_search`): the engine, run on each case as a strategy is
    (:func:`~workbench.evaluate.engines.evaluate_engine`), and its setting in words."""

    strategy: Any
    heading: str
    #: Keys ``eval --json`` adds (serve's: ``dense``, the embedder that scored it, or null).
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchRanking:
    """One query through a runtime's own search (:meth:`Runtime.search_ranker`), under the names
    the runtime lists: what the search returns in its order (``selected``), every tool that
    scored, best first (``ranking``), the catalog tools of ``selected`` (their tokens) and the
    request after the search as the runtime bills it, and the setting searched with (``setting``:
    ``search --json``'s ``method``, ``top_k`` ... ; ``heading``: the same in words)."""

    query: str
    selected: tuple[str, ...]
    ranking: tuple[tuple[str, float], ...]
    indices: tuple[int, ...]
    request_tokens: int
    setting: Mapping[str, Any]
    heading: str
    #: Per row of ``ranking``, what its score is made of (``--json``'s ``shares``; () : none).
    shares: tuple[Mapping[str, float], ...] = ()
    #: Keys ``search --json`` adds for this search (its ``confidence`` ...).
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: A line the text shows under the heading (the search's answer when it returns no tool).
    note: str | None = None


@dataclass(frozen=True)
class ToolConfig:
    """A runtime's tool configuration as text to paste or write, and what to tell the user
    beside it: ``warnings`` (what the output cannot carry) and ``advice``."""

    runtime: str
    text: str
    doc: Any = None
    warnings: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()


def plan_config_write(
    plan: FilePlan,
    *,
    unchanged: str,
    written: str,
    warnings: tuple[str, ...] = (),
) -> ConfigWrite:
    """A plan of the agent YAML (the block, or HoloDeck 0.7's allowlists) as the one write
    every tuner's ``--apply`` shows and makes: the diff, then an atomic write with a backup."""
    from workbench.config.writeback.files import apply_plan

    return ConfigWrite(
        plan.path,
        plan.diff,
        plan.changed,
        lambda: apply_plan(plan, backup=True),
        what=str(plan.path),
        written=written,
        unchanged=unchanged,
        warnings=(*plan.warnings, *warnings),
        no_backup="no backup kept",
    )
