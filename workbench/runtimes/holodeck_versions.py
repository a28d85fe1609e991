"""Which HoloDeck generation runs an agent: the installed ``holodeck-ai``, or a pin beside the
agent (``uv.lock``, ``requirements*.txt``, ``pyproject.toml`` in the agent's folder or a parent, up
to the project's root: the first folder with a ``.git`` or a ``pyproject.toml``).

HoloDeck 0.7 removed ``tool_filtering``: the two generations are two runtimes
(:mod:`workbench.runtimes.holodeck06`, :mod:`workbench.runtimes.holodeck07`), and both read their
evidence here (:func:`holodeck_evidence`, made once per probe).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from workbench.limits import read_text
from workbench.runtimes.base import Evidence, Probe

Generation = Literal["0.6", "0.7"]
PACKAGE = "holodeck-ai"
#: The first release without ``tool_filtering``.
FIRST_07 = Version("0.7.0")
#: Probe versions: a pin that admits one but not the other names its generation.
_PROBE_06, _PROBE_07 = Version("0.6.40"), Version("0.7.1")
_NAME = re.compile(r"^\s*holodeck[-_.]ai\s*(\[[^\]]*\])?\s*(?P<spec>[^;#]*)", re.IGNORECASE)


def generation_of(version: Version) -> Generation:
    return "0.7" if version >= FIRST_07 else "0.6"


def installed_version(dist: str) -> str | None:
    """The version of the distribution ``dist`` installed beside holo-tune, None when it is
    not."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def installed_holodeck() -> str | None:
    """The version of ``holodeck-ai`` installed beside holo-tune, None when it is not."""
    return installed_version(PACKAGE)


def holodeck_evidence(probe: Probe) -> tuple[Generation, Evidence] | None:
    """The HoloDeck generation the probe finds, strongest first: the installed package, then a
    pin beside the agent (None: neither says)."""
    return probe.memo("holodeck", lambda: _evidence(probe))  # type: ignore[no-any-return]


def _evidence(probe: Probe) -> tuple[Generation, Evidence] | None:
    version = probe.installed(PACKAGE)
    if version is not None:
        try:
            generation = generation_of(Version(version))
        except InvalidVersion:
            pass
        else:
            return generation, Evidence(f"{PACKAGE} {version} is installed", "installed")
    pin = find_pin(probe.folder)
    if pin is not None:
        return pin[0], Evidence(pin[1], "pin")
    return None


# ------------------------------------------------------------------------------------- pins


def find_pin(folder: Path) -> tuple[Generation, str] | None:
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


def spec_generation(spec: str) -> Generation | None:
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
        return "0.6" if six else "0.7"
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
