"""A runnable FastMCP proxy of the agent's MCP servers with a tool search transform: a Python file
(``fastmcp_proxy.py`` beside the agent) that a FastMCP user runs as the agent's one MCP server.

:func:`proxy_doc` reads the agent's MCP entries as the file writes them (``${VAR}`` kept, never
expanded) into an MCPConfig (``{"mcpServers": {name: {...}}}``): stdio ``command``/``args``/``env``
(the entry's ``config`` as ``MCP_CONFIG``, as HoloDeck passes it), ``http``/``sse``
``url``/``headers``/``transport``; each entry's ``request_timeout`` (HoloDeck's default 60 s)
becomes FastMCP's per-request ``timeout`` in milliseconds, since the proxy bounds no call
otherwise. What FastMCP has no field for (a websocket entry, ``env_file``) is left out with a
note. The transform is ``BM25SearchTransform`` or ``RegexSearchTransform`` with ``max_results``
and ``always_visible`` (the proxy's names).

:func:`render_proxy` writes it as Python: ``create_proxy(CONFIG)``, ``add_transform(...)`` and
``server.run()`` (stdio) under ``__main__``. A ``${VAR}`` becomes a lookup of the environment when
the proxy starts (a missing one stops it with one line naming it); stdio servers run in the file's
folder, as holo-tune lists them in the agent's. :func:`plan_proxy` and :func:`apply_plan` write
it beside the agent through the one apply (diff, backup, refused when changed since read);
:func:`read_setting` reads the transform's knobs back (what ``search`` searches with).
"""

from __future__ import annotations

import ast
import json
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.catalog.specs import DEFAULT_REQUEST_TIMEOUT
from workbench.config.envsubst import VAR_PATTERN
from workbench.config.writeback.files import FilePlan
from workbench.config.writeback.text import unified_diff
from workbench.errors import ConfigError
from workbench.limits import read_input

#: The file ``tune --apply`` writes beside the agent.
FILE_NAME = "fastmcp_proxy.py"
#: The release the file is written for (its names and signatures were checked against it).
FASTMCP_VERSION = "4.1.6"
#: The transform class of each variant (``fastmcp.server.transforms.search``).
TRANSFORMS = {"bm25": "BM25SearchTransform", "regex": "RegexSearchTransform"}
#: The first line of every file holo-tune writes (detection looks for it).
MARK = "# A FastMCP tool-search proxy written by holo-tune"
#: HoloDeck's remote transports, as an MCPConfig names them.
REMOTE = ("sse", "http")


@dataclass(frozen=True)
class JsonOf:
    """A value the proxy passes as JSON text (an entry's ``config`` as ``MCP_CONFIG``)."""

    value: Any


def server_entry(entry: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """One HoloDeck MCP entry as an MCPConfig server (None when FastMCP has no such transport),
    and notes on what it cannot carry."""
    name = str(entry.get("name"))
    transport = str(entry.get("transport") or "stdio")
    notes: list[str] = []
    out: dict[str, Any]
    if transport == "stdio":
        out = {
            "command": str(entry.get("command", "")),
            "args": [str(a) for a in entry.get("args") or []],
        }
        env: dict[str, Any] = {str(k): str(v) for k, v in dict(entry.get("env") or {}).items()}
        if entry.get("config"):
            env["MCP_CONFIG"] = JsonOf(entry["config"])
        if env:
            out["env"] = env
        if entry.get("env_file"):
            notes.append(f"{name}: the proxy reads no env_file; set its variables in env")
    elif transport in REMOTE:
        out = {"url": str(entry.get("url", "")), "transport": transport}
        if entry.get("headers"):
            out["headers"] = {str(k): str(v) for k, v in dict(entry["headers"]).items()}
    else:
        return None, [f"{name}: FastMCP's MCPConfig has no {transport} transport; left out"]
    seconds = entry.get("request_timeout") or DEFAULT_REQUEST_TIMEOUT
    out["timeout"] = round(float(seconds) * 1000)
    return out, notes


def proxy_doc(
    entries: Sequence[Mapping[str, Any]],
    variant: str,
    max_results: int,
    always_visible: Sequence[str],
    name: str = "tools",
) -> tuple[dict[str, Any], list[str]]:
    """The proxy as data (the MCPConfig and the transform), and notes on what it leaves out."""
    servers: dict[str, Any] = {}
    notes: list[str] = []
    for entry in entries:
        found, said = server_entry(entry)
        notes += said
        if found is not None:
            servers[str(entry.get("name"))] = found
    transform = {
        "class": TRANSFORMS[variant],
        "max_results": max_results,
        "always_visible": list(always_visible),
    }
    return {"name": name, "mcpServers": servers, "transform": transform}, notes


def check_proxy(doc: Any) -> str | None:
    """The first rule of FastMCP's MCPConfig or transform the proxy breaks (None: none)."""
    servers = doc.get("mcpServers") if isinstance(doc, Mapping) else None
    if not isinstance(servers, Mapping) or not servers:
        return "mcpServers has no server: the agent has no MCP entry FastMCP can proxy"
    for name, spec in servers.items():
        if "command" in spec and not str(spec["command"]).strip():
            return f"mcpServers.{name}: a stdio server needs a command"
        if "url" in spec and not str(spec["url"]).startswith(("http://", "https://", "${")):
            return f"mcpServers.{name}: url must start with http:// or https://"
    transform = doc.get("transform")
    if not isinstance(transform, Mapping) or transform.get("class") not in TRANSFORMS.values():
        return "the transform is neither BM25SearchTransform nor RegexSearchTransform"
    if not isinstance(transform.get("max_results"), int) or transform["max_results"] < 1:
        return "max_results must be a whole number of at least 1"
    pins = transform.get("always_visible")
    if not isinstance(pins, list) or not all(isinstance(p, str) for p in pins):
        return "always_visible is not a list of names"
    return None


# ------------------------------------------------------------------------------------ rendering


def _string(text: str) -> str:
    """A string as a Python expression, each ``${VAR}`` an ``env("VAR")`` lookup."""
    parts: list[str] = []
    pos = 0
    for match in VAR_PATTERN.finditer(text):
        if match.start() > pos:
            parts.append(json.dumps(text[pos : match.start()]))
        parts.append(f"env({json.dumps(match.group(1))})")
        pos = match.end()
    if pos < len(text) or not parts:
        parts.append(json.dumps(text[pos:]))
    return " + ".join(parts)


class Code(str):
    """Python source put in the file as it is (the stdio servers' ``cwd``: the file's folder)."""


def expression(value: Any, indent: int = 0) -> str:
    """``value`` as a Python expression (a mapping one key a line, at ``indent`` levels)."""
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, JsonOf):
        return f"json.dumps({expression(value.value, indent)})"
    if isinstance(value, str):
        return _string(value)
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        pad = "    " * (indent + 1)
        items = [f"{pad}{_string(str(k))}: {expression(v, indent + 1)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + "    " * indent + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(expression(v, indent) for v in value) + "]"
    return _string(str(value))


def variables(doc: Any) -> list[str]:
    """The ``${VAR}`` names the doc uses, in order of first use."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, JsonOf):
            walk(value.value)
        elif isinstance(value, str):
            found.update(dict.fromkeys(VAR_PATTERN.findall(value)))
        elif isinstance(value, Mapping):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(doc)
    return list(found)


def _uses_json(value: Any) -> bool:
    if isinstance(value, JsonOf):
        return True
    if isinstance(value, Mapping):
        return any(_uses_json(v) for v in value.values())
    return False


_ENV = '''

def env(name: str) -> str:
    """A variable the agent's MCP entries name as ${NAME}, read when the proxy starts."""
    if name not in os.environ:
        here = os.path.basename(__file__)
        sys.exit(f"{here}: set {name}: the agent's MCP servers use ${{{name}}}")
    return os.environ[name]
'''


def render_proxy(doc: Mapping[str, Any]) -> str:
    """The proxy as a runnable Python file (see the module doc)."""
    transform = doc["transform"]
    servers = {
        name: {**spec, "cwd": Code("HERE")} if "command" in spec else spec
        for name, spec in doc["mcpServers"].items()
    }
    names = variables(doc["mcpServers"])
    pins = transform["always_visible"]
    about = (
        f"Run it as the agent's one MCP server, over stdio: python {FILE_NAME}. It needs fastmcp "
        f"(pip install fastmcp; written for {FASTMCP_VERSION}). The model sees "
        f"{', '.join([*pins, 'search_tools', 'call_tool'])}; search_tools returns at most "
        f"{transform['max_results']} tools and call_tool calls any tool of the servers. Stdio "
        "servers run in this file's folder."
    )
    if names:
        about += f" The servers need these environment variables: {', '.join(names)}."
    imports = ["json", "os", "sys"] if _uses_json(servers) else ["os", "sys"]
    head = [
        MARK,
        f'"""FastMCP tool search over the MCP servers of {doc["name"]}.',
        "",
        textwrap.fill(about, width=99, break_on_hyphens=False, break_long_words=False),
        '"""',
        "",
        "from __future__ import annotations",
        "",
        *(f"import {module}" for module in imports),
        "",
        "from fastmcp.server import create_proxy",
        f"from fastmcp.server.transforms.search import {transform['class']}",
        "",
        "HERE = os.path.dirname(os.path.abspath(__file__))",
    ]
    pinned = "".join(f"            {_string(name)},\n" for name in pins)
    return (
        "\n".join(head)
        + "\n"
        + (_ENV if names else "")
        + f"\n\nCONFIG = {expression({'mcpServers': servers})}\n\n"
        + f"server = create_proxy(CONFIG, name={_string(str(doc['name']))})\n"
        + "server.add_transform(\n"
        + f"    {transform['class']}(\n"
        + f"        max_results={transform['max_results']},\n"
        + ("        always_visible=[\n" + pinned + "        ],\n" if pins else "")
        + "    )\n"
        + ")\n\n"
        + 'if __name__ == "__main__":\n'
        + "    server.run()\n"
    )


# --------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class ProxySetting:
    """The transform a proxy file adds: its variant, ``max_results`` and ``always_visible``."""

    variant: str
    max_results: int
    always_visible: tuple[str, ...]


def read_setting(path: Path) -> ProxySetting | None:
    """The transform ``path`` adds (the first ``BM25SearchTransform(...)`` or
    ``RegexSearchTransform(...)`` call, its knobs written as literals; FastMCP's defaults for
    those it leaves out); None when there is no such file or call, or a knob is not a literal."""
    if not path.is_file():
        return None
    try:
        tree = ast.parse(read_input(path, ConfigError, "FastMCP proxy file").decode("utf-8"))
    except (OSError, ConfigError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    variants = {cls: variant for variant, cls in TRANSFORMS.items()}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else None
        called = node.func.id if isinstance(node.func, ast.Name) else called
        if called not in variants:
            continue
        try:
            knobs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
        except (ValueError, TypeError, SyntaxError):
            return None
        pins = knobs.get("always_visible") or []
        max_results = knobs.get("max_results", 5)
        if not isinstance(max_results, int) or not all(isinstance(n, str) for n in pins):
            return None
        return ProxySetting(variants[called], max_results, tuple(pins))
    return None


# --------------------------------------------------------------------------------------- writing


def plan_proxy(path: str | Path, text: str) -> FilePlan:
    """``path`` holding ``text`` (a new file when there is none)."""
    path = Path(path)
    old: bytes | None = None
    old_text = ""
    if os.path.exists(path):  # under the limits: a regular file, not too large
        old = read_input(path, ConfigError, "FastMCP proxy file")
        try:
            old_text = old.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ConfigError(f"not UTF-8: {err}", file=str(path)) from None
    diff = unified_diff(old_text, text, label=str(path))
    return FilePlan(path, old, text.encode("utf-8"), diff)
