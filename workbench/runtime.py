"""Which runtime reads the agent, and why: HoloDeck 0.6, HoloDeck 0.7, or a deferred-loading API.

HoloDeck 0.7 removed ``tool_filtering`` (an agent that still has the block fails to load) and
filters tools only statically (``allowed_tools`` lists); Anthropic's API, Claude Code and OpenAI's
Responses API defer tools behind a search tool instead. What holo-tune tunes and writes depends on
which of these runs the agent, so every command knows it:

* ``--runtime NAME`` when the user says so;
* else the ``holodeck-ai`` version installed where holo-tune runs (``importlib.metadata``);
* else a pin beside the agent: ``uv.lock``, ``requirements*.txt``, ``pyproject.toml`` in the
  agent's folder or a parent, up to the project's root (the first folder with a ``.git`` or a
  ``pyproject.toml``);
* else the YAML: an ``openai:`` block exists only in 0.7+ configs;
* else HoloDeck 0.6 (today's ``tool_filtering`` behaviour).

:func:`detect_runtime` answers with a :class:`RuntimeInfo` (the name and the reason, for headers,
``check`` and every ``--json``); :func:`check_writable` says whether a write suits the runtime
(``None``) or why not, in one line that names what to use instead.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from workbench.errors import InputError
from workbench.limits import read_text

RuntimeName = Literal["holodeck-0.6", "holodeck-0.7", "anthropic", "claude-code", "openai"]
RUNTIMES: tuple[RuntimeName, ...] = (
    "holodeck-0.6",
    "holodeck-0.7",
    "anthropic",
    "claude-code",
    "openai",
)
#: The runtimes that defer tools behind a provider's search tool.
DEFERRED: tuple[RuntimeName, ...] = ("anthropic", "claude-code", "openai")
Source = Literal["flag", "installed", "pin", "yaml", "default"]
#: What a write changes: the ``tool_filtering`` block, or HoloDeck 0.7's ``allowed_tools`` lists.
Change = Literal["tool_filtering", "allowlists"]

PACKAGE = "holodeck-ai"
#: The first release without ``tool_filtering``.
FIRST_07 = Version("0.7.0")
#: Probe versions: a pin that admits one but not the other names its generation.
_PROBE_06, _PROBE_07 = Version("0.6.40"), Version("0.7.1")
_NAME = re.compile(r"^\s*holodeck[-_.]ai\s*(\[[^\]]*\])?\s*(?P<spec>[^;#]*)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class RuntimeInfo:
    """The runtime the agent is tuned for, and the evidence for it."""

    name: RuntimeName
    reason: str
    source: Source

    @property
    def reads_tool_filtering(self) -> bool:
        """Only HoloDeck 0.4-0.6 reads a ``tool_filtering`` block."""
        return self.name == "holodeck-0.6"

    @property
    def deferred(self) -> bool:
        return self.name in DEFERRED

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason, "source": self.source}

    def line(self) -> str:
        """``runtime holodeck-0.7 (holodeck-ai 0.7.1 is installed)``: for headers and reports."""
        return f"runtime {self.name} ({self.reason})"


def generation_of(version: Version) -> RuntimeName:
    return "holodeck-0.7" if version >= FIRST_07 else "holodeck-0.6"


def installed_holodeck() -> str | None:
    """The version of ``holodeck-ai`` installed beside holo-tune, None when it is not."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def parse_runtime(name: str) -> RuntimeName:
    """A ``--runtime`` value (InputError naming the known ones otherwise)."""
    for known in RUNTIMES:
        if name == known:
            return known
    raise InputError(f"unknown runtime {name!r} (known: {', '.join(RUNTIMES)})", field="--runtime")


def detect_runtime(
    agent_path: str | Path,
    data: Mapping[str, Any] | None,
    *,
    explicit: str | None = None,
    installed: Callable[[], str | None] = installed_holodeck,
) -> RuntimeInfo:
    """The runtime of the agent at ``agent_path`` (``data``: its parsed YAML), strongest signal
    first: ``explicit`` (the flag), the installed ``holodeck-ai``, a pin beside the agent, the
    YAML, the default."""
    if explicit is not None:
        return RuntimeInfo(parse_runtime(explicit), "--runtime", "flag")
    version = installed()
    if version is not None:
        try:
            name = generation_of(Version(version))
        except InvalidVersion:
            pass
        else:
            return RuntimeInfo(name, f"{PACKAGE} {version} is installed", "installed")
    pin = find_pin(Path(agent_path).resolve().parent)
    if pin is not None:
        return RuntimeInfo(pin[0], pin[1], "pin")
    if data is not None and "openai" in data:
        return RuntimeInfo("holodeck-0.7", "the YAML has an 'openai:' block (0.7+ only)", "yaml")
    if data is not None and "tool_filtering" in data:
        return RuntimeInfo(
            "holodeck-0.6", "the YAML has a tool_filtering block (HoloDeck 0.4-0.6)", "yaml"
        )
    return RuntimeInfo("holodeck-0.6", "nothing says 0.7+: HoloDeck 0.4-0.6 assumed", "default")


# ------------------------------------------------------------------------------------- pins


def find_pin(folder: Path) -> tuple[RuntimeName, str] | None:
    """The generation a pin beside the agent names, and where: the agent's folder, then its
    parents up to the project's root. A pin that admits both 0.6 and 0.7 says nothing."""
    for where in _up_to_root(folder):
        for path, spec in _pins_in(where):
            name = spec_generation(spec)
            if name is not None:
                shown = spec.strip() or "(any)"
                return name, f"{path.name} pins {PACKAGE}{shown}"
    return None


def _up_to_root(folder: Path) -> Iterator[Path]:
    for where in (folder, *folder.parents):
        yield where
        if (where / ".git").exists() or (where / "pyproject.toml").is_file():
            return


def _pins_in(folder: Path) -> Iterator[tuple[Path, str]]:
    """``(file, specifier)`` for each mention of holodeck-ai, lock file first."""
    lock = folder / "uv.lock"
    if lock.is_file():
        for package in _toml(lock).get("package", []):
            if isinstance(package, dict) and _is_ours(str(package.get("name", ""))):
                yield lock, f"=={package.get('version', '')}"
    for req in sorted(folder.glob("requirements*.txt")):
        for line in _read(req).splitlines():
            match = _NAME.match(line)
            if match and not line.strip().startswith("#"):
                yield req, match["spec"].strip()
    project = folder / "pyproject.toml"
    if project.is_file():
        yield from ((project, s) for s in _pyproject_specs(_toml(project)))


def _pyproject_specs(doc: dict[str, Any]) -> Iterator[str]:
    proj = doc.get("project", {})
    lists: list[Any] = [proj.get("dependencies", [])]
    lists += list(proj.get("optional-dependencies", {}).values())
    lists += list(doc.get("dependency-groups", {}).values())
    for entries in lists:
        for entry in entries if isinstance(entries, list) else []:
            match = _NAME.match(entry) if isinstance(entry, str) else None
            if match:
                yield match["spec"].strip()
    poetry = doc.get("tool", {}).get("poetry", {}).get("dependencies", {})
    for key, value in poetry.items() if isinstance(poetry, dict) else []:
        if _is_ours(key):
            spec = value.get("version", "") if isinstance(value, dict) else str(value)
            yield _poetry_spec(str(spec))


def _poetry_spec(spec: str) -> str:
    """Poetry's ``^0.6.40`` (``>=0.6.40,<0.7``), ``~0.6.40`` (``>=0.6.40,<0.7``) or ``0.7.1``
    (``==0.7.1``) as a PEP 440 specifier."""
    spec = spec.strip()
    if spec.startswith(("^", "~")) and not spec.startswith("~="):
        low = spec.lstrip("^~").strip()
        try:
            parts = [int(p) for p in low.split(".")]
        except ValueError:
            return ""
        if spec.startswith("^"):
            first = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
        else:
            first = min(1, len(parts) - 1)
        upper = [*parts[:first], parts[first] + 1]
        return f">={low},<{'.'.join(map(str, upper))}"
    if spec and spec[0].isdigit():
        return "==" + spec
    return spec


def spec_generation(spec: str) -> RuntimeName | None:
    """The generation a specifier admits: one of 0.6.40 and 0.7.1 but not the other."""
    try:
        specifiers = SpecifierSet(spec.replace(" ", ""))
    except InvalidSpecifier:
        return None
    six = specifiers.contains(_PROBE_06, prereleases=True)
    seven = specifiers.contains(_PROBE_07, prereleases=True)
    exact = [s.version for s in specifiers if s.operator in ("==", "===", "~=")]
    if exact and "*" not in exact[0]:
        try:
            return generation_of(Version(exact[0]))
        except InvalidVersion:
            return None
    if six != seven:
        return "holodeck-0.6" if six else "holodeck-0.7"
    return None


def _is_ours(name: str) -> bool:
    return re.sub(r"[-_.]+", "-", name).lower() == PACKAGE


def _read(path: Path) -> str:
    """A pin file's text ("" when it cannot be read: a pin only hints). Only a regular file is
    read (a FIFO named ``uv.lock`` would block the detection), at most the limits' size."""
    try:
        return read_text(path)
    except (OSError, UnicodeDecodeError):
        return ""


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError:
        return {}


# ------------------------------------------------------------------------------------ writes

_INSTEAD_07 = (
    "use `holo-tune tune --runtime holodeck-0.7 --apply` (static allowed_tools lists) instead"
)


def check_writable(runtime: RuntimeInfo, change: Change) -> str | None:
    """Why writing ``change`` into the agent YAML would not suit ``runtime`` (None: it does).

    The one line says why and what to use instead; callers refuse the write (exit 2, file
    untouched) unless the user forces it (the command line says how: ``--force``).
    """
    if change == "tool_filtering":
        if runtime.name == "holodeck-0.7":
            return (
                f"refused: the runtime is holodeck-0.7 ({runtime.reason}); HoloDeck 0.7 removed "
                f"tool_filtering and refuses to load a file that has it; {_INSTEAD_07}"
            )
        if runtime.deferred:
            return (
                f"refused: the runtime is {runtime.name}, which does not read agent.yaml's "
                f"tool_filtering; use `holo-tune export --runtime {runtime.name}` to print its "
                "configuration"
            )
        return None
    if runtime.name == "holodeck-0.6":
        return (
            f"refused: the runtime is holodeck-0.6 ({runtime.reason}), whose filter is the "
            "tool_filtering block (its Semantic Kernel path ignores allowed_tools); use "
            "`holo-tune tune --apply`, or --runtime holodeck-0.7 if the agent runs on 0.7"
        )
    if runtime.deferred:
        return (
            f"refused: the runtime is {runtime.name}, which does not read agent.yaml; use "
            f"`holo-tune export --runtime {runtime.name}`"
        )
    return None
