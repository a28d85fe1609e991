"""The loader against HoloDeck 0.6.40's own loader steps and ``Agent`` model, file by file.

``make test`` downloads the HoloDeck wheel into .cache/holodeck (the search oracle's target). Here
the whole wheel is unpacked into a temporary directory and, in a subprocess (its imports must not
leak into this one), each file goes through HoloDeck's steps: ``substitute_env_vars`` on the raw
text, ``yaml.safe_load``, ``Agent(**data)``. Third-party modules HoloDeck imports but never calls
while validating (Semantic Kernel, click, dotenv, ...) are stand-ins.

Expected: HoloDeck accepts exactly the files holo-tune accepts without a "HoloDeck rejects"
warning; where both reject, holo-tune's field is HoloDeck's error location or a key inside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from workbench.config import load_agent
from workbench.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
WHEEL = REPO / ".cache" / "holodeck" / "holodeck_ai-0.6.40-py3-none-any.whl"
CONFIGS = Path(__file__).parent / "configs"
ENV = {"HOLO_TUNE_TEST_KEY": "k"}

pytestmark = pytest.mark.skipif(
    not WHEEL.is_file(), reason="the HoloDeck 0.6.40 wheel is not in .cache/holodeck (make test)"
)

#: Run by the subprocess: HoloDeck's loading steps on each file, the first error's location.
HOLODECK_SIDE = r"""
import importlib.abc, importlib.machinery, importlib.util, json, os, sys, types
from unittest import mock

root, env, paths = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])


class _Standin(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return mock.MagicMock(name=name)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top == "holodeck" or importlib.machinery.PathFinder.find_spec(top) is not None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        module = _Standin(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.path.insert(0, root)
sys.meta_path.append(_Finder())
import yaml
from pydantic import ValidationError
from holodeck.config.env_loader import substitute_env_vars
from holodeck.lib.errors import ConfigError
from holodeck.models.agent import Agent

os.environ.clear()
os.environ.update(env)
out = []
for path in paths:
    try:
        data = yaml.safe_load(substitute_env_vars(open(path, encoding="utf-8").read())) or {}
        Agent(**data)
        out.append({"accept": True, "loc": None})
    except ValidationError as err:
        out.append({"accept": False, "loc": [list(e["loc"]) for e in err.errors()]})
    except (ConfigError, yaml.YAMLError, TypeError) as err:
        out.append({"accept": False, "loc": []})
print(json.dumps(out))
"""

BASE = "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
EXPECT = BASE + "test_cases:\n  - input: q\n    expected_tools: "
INLINE = {
    "top_k_zero": BASE + "tool_filtering:\n  top_k: 0\n",
    "threshold_text": BASE + "tool_filtering:\n  similarity_threshold: high\n",
    "enabled_yes": BASE + "tool_filtering:\n  enabled: yes\n  top_k: '7'\n",
    "always_include_null": BASE + "tool_filtering:\n  always_include: null\n",
    "sse_remote_http": BASE
    + "tools:\n  - {name: x, type: mcp, description: d, transport: sse, url: 'http://example.com'}\n",
    "ws_ok": BASE
    + "tools:\n  - {name: x, type: mcp, description: d, transport: websocket, url: 'ws://h/x'}\n",
    "stdio_docker": BASE + "tools:\n  - {name: x, type: mcp, description: d, command: docker}\n",
    "stdio_path_command": BASE
    + "tools:\n  - {name: x, type: mcp, description: d, command: /usr/bin/npx}\n",
    "timeout_float": BASE
    + "tools:\n  - {name: x, type: mcp, description: d, command: npx, request_timeout: 2.5}\n",
    "timeout_whole_float": BASE
    + "tools:\n  - {name: x, type: mcp, description: d, command: npx, request_timeout: 30.0}\n",
    "args_number": BASE
    + "tools:\n  - {name: x, type: mcp, description: d, command: npx, args: [1]}\n",
    "vector_db_string": BASE
    + "tools:\n  - {name: v, type: vectorstore, description: d, source: s.md, database: main}\n",
    "vector_db_bad": BASE
    + "tools:\n  - {name: v, type: vectorstore, description: d, source: s.md, "
    "database: {provider: mysql}}\n",
    "vector_top_k": BASE
    + "tools:\n  - {name: v, type: vectorstore, description: d, source: s.md, top_k: 101}\n",
    "prompt_both": BASE
    + "tools:\n  - {name: p, type: prompt, description: d, template: t, file: f, "
    "parameters: {a: {}}}\n",
    "function_no_file": BASE
    + "tools:\n  - {name: f, type: function, description: d, function: g}\n",
    "hier_ok": BASE
    + "tools:\n  - {name: h, type: hierarchical_document, description: d, source: docs/, "
    "keyword_index: {provider: opensearch, endpoint: 'https://o', index_name: i}}\n",
    "hier_opensearch": BASE
    + "tools:\n  - {name: h, type: hierarchical_document, description: d, source: docs/, "
    "keyword_index: {provider: opensearch}}\n",
    "model_ollama": "name: a\nmodel: {provider: ollama, name: llama3, endpoint: 'http://h'}\n"
    "instructions: {file: i.md}\n",
    "model_top_p": BASE.replace("gpt-4o}", "gpt-4o, top_p: 1.5}"),
    "model_max_tokens": BASE.replace("gpt-4o}", "gpt-4o, max_tokens: 0}"),
    "embedding_unknown": BASE + "embedding_provider: {provider: openai, name: e, dims: 3}\n",
    "case_turns_empty": BASE + "test_cases:\n  - turns: []\n",
    "case_expected_object": BASE + "test_cases:\n  - input: q\n    expected_tools:\n"
    "      - {name: a, args: {x: {fuzzy: y}, y: {regex: 'a+'}, z: [1]}, count: 2}\n",
    "case_matcher_both": EXPECT + "[{name: a, args: {x: {fuzzy: y, regex: z}}}]\n",
    "case_matcher_extra": EXPECT + "[{name: a, args: {x: {regex: y, i: 1}}}]\n",
    "case_matcher_regex": EXPECT + "[{name: a, args: {x: {regex: '('}}}]\n",
    "case_literal_dict": EXPECT + "[{name: a, args: {x: {k: v}}}]\n",
    "case_extra": BASE + "test_cases:\n  - input: q\n    expected: [a]\n",
    "instructions_both": "name: a\nmodel: {provider: openai, name: gpt-4o}\n"
    "instructions: {file: a, inline: b}\n",
    "claude_block": BASE.replace("openai", "anthropic").replace("gpt-4o", "claude-sonnet-4")
    + "claude:\n  permission_mode: manual\n",
    "name_empty": "name: ''\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n",
}


def _holodeck(root: Path, paths: list[Path]) -> list[dict[str, Any]]:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            HOLODECK_SIDE,
            str(root),
            json.dumps(ENV),
            json.dumps([str(p) for p in paths]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out: list[dict[str, Any]] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


#: Where holo-tune blames a different key than HoloDeck's validator does, on purpose.
RELOCATED = {
    # HoloDeck checks "template or file" in a validator on ``parameters``; the cause is template.
    "prompt_both": ("tools[0].parameters", "tools[0].template"),
}


def _dotted(loc: list[Any]) -> str:
    """HoloDeck's location in holo-tune's style, union tags dropped."""
    tool_tags = {"mcp", "vectorstore", "function", "prompt", "hierarchical_document"}
    parts: list[str] = []
    for i, part in enumerate(loc):
        after_index = i > 0 and isinstance(loc[i - 1], int)
        if isinstance(part, str) and (
            (part in tool_tags and after_index) or part == "str" or part[:1].isupper()
        ):
            continue
        parts.append(f"[{part}]" if isinstance(part, int) else ("." if parts else "") + part)
    return "".join(parts)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Any]]:
    root = tmp_path_factory.mktemp("holodeck")
    with zipfile.ZipFile(WHEEL) as wheel:
        wheel.extractall(root, [n for n in wheel.namelist() if n.startswith("holodeck/")])
    files = sorted(CONFIGS.glob("*.yaml"))
    inline_dir = tmp_path_factory.mktemp("inline")
    for name, text in INLINE.items():
        (inline_dir / f"{name}.yaml").write_text(text)
        files.append(inline_dir / f"{name}.yaml")
    theirs = _holodeck(root, files)
    ours: list[Any] = []
    for path in files:
        try:
            ours.append(load_agent(path, environ=ENV, dotenv_files=[]))
        except ConfigError as err:
            ours.append(err)
    return {p.stem: (o, t) for p, o, t in zip(files, ours, theirs, strict=True)}


FILES = sorted({p.stem for p in CONFIGS.glob("*.yaml")} | set(INLINE))


@pytest.mark.parametrize("name", FILES)
def test_same_verdict_as_holodeck(verdicts: dict[str, tuple[Any, Any]], name: str) -> None:
    ours, theirs = verdicts[name]
    if isinstance(ours, ConfigError):
        assert not theirs["accept"], f"holo-tune refuses what HoloDeck accepts: {ours}"
        if theirs["loc"]:
            fields = [_dotted(loc) for loc in theirs["loc"]]
            if name in RELOCATED:
                assert (fields[0], ours.field) == RELOCATED[name]
                return
            assert any((ours.field or "").startswith(f) for f in fields if f), (ours, fields)
        return
    downgraded = [w for w in ours.warnings if "HoloDeck" in w and "reject" in w]
    if ours.generation == "0.7+":
        assert not theirs["accept"]  # 0.6 forbids the openai block; diagnostics report it
    elif downgraded:
        assert not theirs["accept"], downgraded
    else:
        assert theirs["accept"], f"holo-tune accepts what HoloDeck refuses: {theirs['loc']}"
