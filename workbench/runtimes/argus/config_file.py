"""Argus MCP's ``config.yaml``: the agent's MCP entries as ``backends`` and the optimizer with the
tools it keeps listed (``optimizer: {enabled: true, keep_tools: [...]}``).

:func:`render_argus` turns the agent's MCP entries (as the file writes them: ``${VAR}`` kept, never
expanded; Argus expands it when it loads) into the config Argus's ``ArgusConfig`` validates:
``stdio`` -> ``command``/``args``/``env``; ``sse`` -> ``url``/``headers``; ``http`` (streamable
HTTP) -> ``type: streamable-http`` with ``url``/``headers``. What Argus has no field for (a
websocket entry, ``env_file``) is left out with a note.

:func:`plan_argus` merges into a file that exists (``argus/config.yaml``, else
``argus/config.yml``, beside the agent: not ``config.yaml`` itself, which HoloDeck reads as the
agent's project config and refuses with Argus's keys, so the agent would no longer load), round
trip (ruamel.yaml): every other key, comment and the order are kept; an agent backend the file
lacks is added, one it has is left as the user wrote it; ``optimizer.enabled`` becomes true and
``optimizer.keep_tools`` the tuned list; description overrides (``tool_overrides``, keyed by
the tool's name as its backend lists it: Argus's ``ToolOverrideEntry``) are set on their backend,
the entry's other keys (a rename) kept. :func:`apply_plan` writes the plan atomically with a
backup, refused when the file changed since it was read. :func:`read_argus` reads what a
config already says (its ``keep_tools`` and description overrides) for the search to start from.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.error import YAMLError as RuamelError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

from workbench.config.writeback.files import FilePlan
from workbench.config.writeback.text import unified_diff
from workbench.errors import ConfigError
from workbench.limits import read_input

#: The file names Argus looks for, in its order.
CONFIG_NAMES = ("config.yaml", "config.yml")
#: The folder beside the agent that holds Argus's config (HoloDeck owns ``config.yaml`` there).
FOLDER = "argus"
#: HoloDeck's MCP transports, as Argus's backend types name them.
BACKEND_TYPES = {"stdio": "stdio", "sse": "sse", "http": "streamable-http"}


def config_path(folder: Path) -> Path:
    """Where Argus's config is for the agent in ``folder``: ``argus/config.yaml``, else
    ``argus/config.yml``, else a new ``argus/config.yaml``."""
    home = folder / FOLDER
    for name in CONFIG_NAMES:
        if (home / name).exists():
            return home / name
    return home / CONFIG_NAMES[0]


def backend(entry: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """One HoloDeck MCP entry as an Argus backend (None when Argus has no such transport), and
    notes on what it cannot carry."""
    name = str(entry.get("name"))
    transport = str(entry.get("transport") or "stdio")
    kind = BACKEND_TYPES.get(transport)
    if kind is None:
        return None, [f"{name}: Argus has no {transport} backend; left out"]
    notes = []
    out: dict[str, Any] = {"type": kind}
    if kind == "stdio":
        out["command"] = str(entry.get("command", ""))
        out["args"] = [str(a) for a in entry.get("args") or []]
        if entry.get("env"):
            out["env"] = {str(k): str(v) for k, v in dict(entry["env"]).items()}
        if entry.get("env_file"):
            notes.append(f"{name}: Argus has no env_file; set its variables in env")
    else:
        out["url"] = str(entry.get("url", ""))
        if entry.get("headers"):
            out["headers"] = {str(k): str(v) for k, v in dict(entry["headers"]).items()}
    return out, notes


#: Description overrides: ``{backend: {tool as the backend lists it: description}}``.
Descriptions = Mapping[str, Mapping[str, str]]


def render_argus(
    entries: Sequence[Mapping[str, Any]],
    keep_tools: Sequence[str],
    prefix: bool = False,
    descriptions: Descriptions | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The Argus config for the agent's MCP ``entries`` with ``keep_tools`` listed beside
    ``find_tool``/``call_tool``; ``prefix``: tools named ``<backend>_<tool>`` (Argus's
    ``prefix`` conflict strategy, written when two backends share a tool name);
    ``descriptions``: each backend's ``tool_overrides``."""
    backends: dict[str, Any] = {}
    notes: list[str] = []
    for entry in entries:
        found, said = backend(entry)
        notes += said
        if found is not None:
            name = str(entry.get("name"))
            overrides = (descriptions or {}).get(name)
            if overrides:
                found["tool_overrides"] = {
                    tool: {"description": _block(text)} for tool, text in overrides.items()
                }
            backends[name] = found
    doc: dict[str, Any] = {"version": "1", "backends": backends}
    if prefix:
        doc["conflict_resolution"] = {"strategy": "prefix", "separator": "_"}
    doc["optimizer"] = {"enabled": True, "keep_tools": list(keep_tools)}
    return doc, notes


def _block(text: str) -> str:
    """A description of several lines as a YAML block (``|-``), as a person would write it."""
    lines = text.split("\n")
    plain = all(line == line.rstrip() and line.isprintable() for line in lines)
    return LiteralScalarString(text) if len(lines) > 1 and plain and text == text.strip() else text


def _yaml() -> YAML:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    rt.indent(mapping=2, sequence=4, offset=2)
    return rt


def dump(doc: Any) -> str:
    """``doc`` as the YAML holo-tune writes (the round trip's own layout for a loaded file; a
    rendered config's version double-quoted, as Argus's examples write it)."""
    if not isinstance(doc, CommentedMap) and isinstance(doc.get("version"), str):
        doc = {**doc, "version": DoubleQuotedScalarString(doc["version"])}
    out = io.StringIO()
    _yaml().dump(doc, out)
    return out.getvalue()


def _load(path: Path, text: str) -> CommentedMap:
    try:
        doc = _yaml().load(text)
    except MarkedYAMLError as err:
        mark = err.problem_mark
        line = None if mark is None else mark.line + 1
        raise ConfigError(f"not YAML: {err.problem}", file=str(path), line=line) from None
    except RuamelError as err:
        raise ConfigError(f"not YAML: {err}".splitlines()[0], file=str(path)) from None
    if doc is None:
        return CommentedMap()
    if not isinstance(doc, CommentedMap):
        raise ConfigError("not an Argus config: the top level is not a mapping", file=str(path))
    return doc


def _mapping(doc: CommentedMap, key: str, path: Path, where: str = "") -> CommentedMap:
    """``doc[key]``, a mapping (added when absent or null; refused when it is something else);
    ``where``: the keys above it, for the message."""
    value = doc.get(key)
    if value is None:
        doc[key] = value = CommentedMap()
    if not isinstance(value, CommentedMap):
        line = doc.lc.key(key)[0] + 1
        raise ConfigError("is not a mapping", file=str(path), line=line, field=f"{where}{key}")
    return value


def _merge_overrides(
    backends: CommentedMap, name: str, spec: Mapping[str, Any], path: Path
) -> None:
    """``spec``'s description overrides into the file's backend ``name`` (an entry's other keys,
    such as a rename, kept)."""
    overrides = spec.get("tool_overrides")
    if not overrides:
        return
    where = f"backends.{name}."
    existing = _mapping(_mapping(backends, name, path, "backends."), "tool_overrides", path, where)
    for tool, entry in overrides.items():
        _mapping(existing, tool, path, f"{where}tool_overrides.")["description"] = entry[
            "description"
        ]


def merge(doc: CommentedMap, rendered: Mapping[str, Any], path: Path) -> None:
    """``rendered``'s backends the file lacks, its conflict strategy when the file sets none, and
    its optimizer, into ``doc`` (everything else as it is)."""
    if "version" not in doc:
        doc.insert(0, "version", DoubleQuotedScalarString(rendered["version"]))
    backends = _mapping(doc, "backends", path)
    for name, spec in rendered["backends"].items():
        if name not in backends:
            backends[name] = spec
        else:
            _merge_overrides(backends, name, spec, path)
    if "conflict_resolution" in rendered and "conflict_resolution" not in doc:
        doc["conflict_resolution"] = rendered["conflict_resolution"]
    optimizer = _mapping(doc, "optimizer", path)
    optimizer["enabled"] = True
    wanted = list(rendered["optimizer"]["keep_tools"])
    if list(optimizer.get("keep_tools") or []) != wanted:
        optimizer["keep_tools"] = wanted


@dataclass(frozen=True)
class ArgusFile:
    """What an Argus config already says that the search reads."""

    keep_tools: tuple[str, ...] = ()
    #: ``{backend: {tool as the backend lists it: description}}``.
    descriptions: Descriptions = field(default_factory=dict)


def read_argus(path: str | Path) -> ArgusFile:
    """``optimizer.keep_tools`` and the description overrides of the config at ``path`` (none
    when there is no file; a part that is not what Argus's schema wants is left out: writing
    refuses it with its line)."""
    path = Path(path)
    if not os.path.exists(path):
        return ArgusFile()
    doc = _load(path, _read(path)[1])
    optimizer = doc.get("optimizer")
    keep = optimizer.get("keep_tools") if isinstance(optimizer, Mapping) else None
    kept = tuple(str(k) for k in keep) if isinstance(keep, list) else ()
    descriptions: dict[str, dict[str, str]] = {}
    backends = doc.get("backends")
    for name, spec in (backends or {}).items() if isinstance(backends, Mapping) else ():
        overrides = spec.get("tool_overrides") if isinstance(spec, Mapping) else None
        for tool, entry in (overrides or {}).items() if isinstance(overrides, Mapping) else ():
            if isinstance(entry, Mapping) and isinstance(entry.get("description"), str):
                descriptions.setdefault(str(name), {})[str(tool)] = str(entry["description"])
    return ArgusFile(kept, descriptions)


def plan_argus(path: str | Path, rendered: Mapping[str, Any]) -> FilePlan:
    """``path`` with ``rendered`` (:func:`render_argus`) merged in; a new file when none."""
    path = Path(path)
    old: bytes | None = None
    if not os.path.exists(path):
        old_text, new_text = "", dump(dict(rendered))
    else:
        old, old_text = _read(path)
        doc = _load(path, old_text)
        merge(doc, rendered, path)
        new_text = dump(doc)
        if _same(old_text, new_text, path):
            new_text = old_text  # nothing to do: keep the file's own layout
    return FilePlan(
        path, old, new_text.encode("utf-8"), unified_diff(old_text, new_text, label=str(path))
    )


def _read(path: Path) -> tuple[bytes, str]:
    """The file's bytes and text (under the limits: a regular file, not too large; UTF-8)."""
    raw = read_input(path, ConfigError, "Argus config file")
    try:
        return raw, raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8: {err}", file=str(path)) from None


def _same(old_text: str, new_text: str, path: Path) -> bool:
    return _load(path, old_text) == _load(path, new_text)
