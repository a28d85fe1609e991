"""What a serve replica imports to become ready: nothing it does not use. Each module named here
cost its start measurable time once (scipy.sparse through bm25s and the sweep: 0.2 s; griffe,
FastMCP's docstring parser, for our tools' docstrings: 40 ms; tqdm through bm25s; ruamel.yaml, for
YAML cases files: 13 ms)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from provided import LOCAL_EXTRA

BFCL = Path(__file__).parent / "data" / "datasets" / "bfcl"
UNUSED = ["scipy", "griffe", "tqdm", "torch", "sentence_transformers", "sklearn", "ruamel"]

BUILD = """
import json, sys
from workbench.cli import build_parser
import workbench.commands.serve as command
from workbench.serve.calls import Router
from workbench.serve.server import build_server
args = build_parser()[2]["serve"].parse_args(sys.argv[1:])
served = command.served_from_args(args)
index = command.snapshot_index(args, served)
server = build_server(index, Router(index, None))
print(json.dumps([len(index.catalog), sorted(m for m in sys.modules if m.split(".")[0] in %r)]))
"""


def test_serves_start_imports_none_of_what_it_does_not_use(tmp_path: Path) -> None:
    argv = [str(BFCL / "agent.yaml"), "--catalog", str(BFCL / "catalog.json")]
    done = subprocess.run(
        [sys.executable, "-c", BUILD % (UNUSED,), *argv, "--embedder", "none"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    tools, imported = json.loads(done.stdout.splitlines()[-1])
    assert tools == 1287
    assert imported == []


LOAD = """
import sys
from workbench.search.embedders import LocalEmbedder
embedder = LocalEmbedder("all-MiniLM-L6-v2")
embedder.load()
print(embedder.backend, "onnx" in sys.modules)
"""


@LOCAL_EXTRA
def test_a_restart_reads_the_models_graph_without_importing_onnx(tmp_path: Path) -> None:
    """The first load builds MiniLM's graph with onnx's helpers and keeps it in the cache; a
    replica started on that cache reads it (onnx's import: 0.2 s of its start)."""
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path), "HOME": str(tmp_path)}
    said = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", LOAD], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr
        said.append(done.stdout.split())
    assert said == [["onnxruntime", "True"], ["onnxruntime", "False"]]
