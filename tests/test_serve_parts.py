"""The small parts of ``holo-tune serve``: restart backoff, the owner of a full name, the schema
check, the log scrubber, and fastmcp imported only by the serve package."""

from __future__ import annotations

import json
import logging
import pkgutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from provided import LOCAL_EXTRA

import workbench
from workbench.catalog.specs import McpServerSpec
from workbench.serve.calls import check_arguments
from workbench.serve.logs import Scrub, secrets_of
from workbench.serve.upstream import Backoff, CallFailed, UpstreamPool


def test_backoff_restarts_at_once_then_every_few_seconds_doubling() -> None:
    backoff = Backoff()
    assert backoff.wait(100.0) == 0  # the first restart: now
    backoff.attempted(100.0)
    assert backoff.wait(100.5) == pytest.approx(1.5)  # then 2 s after the last one
    backoff.attempted(102.0)
    assert backoff.wait(102.0) == pytest.approx(4.0)  # then 4 s, 8 s, ...
    for at in range(10):
        backoff.attempted(200.0 + at)
    assert backoff.wait(209.0) == pytest.approx(60.0)  # at most a minute
    backoff.succeeded()
    assert backoff.wait(209.0) == 0


def test_a_full_name_belongs_to_the_longest_server_name(tmp_path: Path) -> None:
    specs = [McpServerSpec(name="git"), McpServerSpec(name="git-hub")]
    pool = UpstreamPool(specs, log_dir=tmp_path)
    found = pool.owner("git-hub-create_issue")
    assert found is not None and (found[0].name, found[1]) == ("git-hub", "create_issue")
    found = pool.owner("git-status")
    assert found is not None and (found[0].name, found[1]) == ("git", "status")
    assert pool.owner("gitstatus") is None


def test_arguments_are_checked_against_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
        "required": ["items"],
    }
    check_arguments("t", schema, {"items": [1, 2]})
    with pytest.raises(CallFailed, match=r"^arguments for t break its input schema at items/1: "):
        check_arguments("t", schema, {"items": [1, "two"]})
    with pytest.raises(CallFailed, match="'items' is a required property"):
        check_arguments("t", schema, {})
    check_arguments("t", {"type": "no such type"}, {"x": 1})  # an invalid schema: the server's


def test_the_log_hides_every_environment_and_header_value() -> None:
    specs = [
        McpServerSpec(name="a", env={"KEY": "sk-abcdef123456", "DEBUG": "1"}),
        McpServerSpec(name="b", transport="http", headers={"Authorization": "Bearer tok-98765"}),
    ]
    secrets = secrets_of(specs)
    assert secrets == {"sk-abcdef123456", "Bearer tok-98765"}  # "1" is no secret
    record = logging.LogRecord(
        "x", logging.INFO, "f", 1, "failed: %s", ("key sk-abcdef123456",), None
    )
    assert Scrub(secrets).filter(record)
    assert record.getMessage() == "failed: key [hidden]"


def test_fastmcp_is_imported_only_by_the_serve_package() -> None:
    modules = [
        info.name
        for info in pkgutil.walk_packages(workbench.__path__, prefix="workbench.")
        if not info.name.startswith(("workbench.tui", "workbench.serve"))
        and info.name != "workbench.__main__"  # runs the CLI
    ]
    assert "workbench.commands.serve" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'fastmcp'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    probe = "import sys, workbench.serve.server\nprint('fastmcp' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.stdout.strip() == "True"  # the check above can fail


def test_a_query_runs_numpys_blas_on_one_thread_and_scores_the_same() -> None:
    """serve's queries hand no BLAS work to a second thread (the dense signal's product of one
    vector with every tool vector: 0.05 ms on one thread, ms more on a busy machine with two),
    and the scores are bit for bit those of two threads. In a process of its own: the limit is
    process-wide."""
    code = (
        "import json, numpy as np\n"
        "from threadpoolctl import threadpool_info, threadpool_limits\n"
        "from workbench.serve.app import one_thread_per_query\n"
        "rng = np.random.default_rng(7)\n"
        "unit, vector = rng.standard_normal((1287, 384)), rng.standard_normal(384)\n"
        "threadpool_limits(limits=2, user_api='blas')\n"
        "before = unit @ vector\n"
        "one_thread_per_query()\n"
        "threads = [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas']\n"
        "print(json.dumps([threads, bool(np.array_equal(before, unit @ vector))]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    threads, same = json.loads(result.stdout)
    assert threads and set(threads) == {1}
    assert same


@LOCAL_EXTRA
def test_a_search_that_waited_for_the_model_load_leaves_its_thread_on_one_torch_thread() -> None:
    """serve loads the model in a thread of its own while a first search waits for it in the
    worker thread every later search reuses: that worker embeds on one torch thread too (torch
    keeps a count per thread; two threads took a search from 50 ms to 500 ms on a busy
    machine). In a process of its own: torch's count is process-wide for new threads."""
    code = (
        "import json, threading, torch\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from workbench.search.embedders.local import LocalEmbedder, load_model\n"
        "from workbench.serve.app import one_thread_per_query\n"
        "embedder = LocalEmbedder('all-MiniLM-L6-v2', backend='sentence-transformers')\n"
        "one_thread_per_query(embedder)\n"
        "worker = ThreadPoolExecutor(1)\n"
        "loader = threading.Thread(target=load_model, args=(embedder,))\n"
        "loader.start()\n"
        "first = worker.submit(embedder.embed, ['find a symbol'])\n"
        "loader.join()\n"
        "one_thread_per_query(embedder)\n"
        "first.result()\n"
        "def search():\n"
        "    embedder.embed(['read a file'])\n"
        "    return torch.get_num_threads()\n"
        "print(json.dumps(worker.submit(search).result()))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == 1


def test_nothing_found_says_no_tool_fits(tmp_path: Path) -> None:
    """An answer with no tool is still text a client can read: that no tool fits, and why."""
    from fastmcp import Client

    from workbench.catalog.models import Catalog
    from workbench.config import load_agent
    from workbench.search.holo.settings import HoloSettings
    from workbench.serve.calls import Router
    from workbench.serve.index import ServeIndex
    from workbench.serve.server import build_server

    agent_file = tmp_path / "agent.yaml"
    agent_file.write_text(
        "name: empty\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: x\n"
    )
    agent = load_agent(agent_file)
    index = ServeIndex(agent, Catalog(tools=[], servers=[]), HoloSettings(), embedder_spec="none")

    async def ask() -> tuple[bool, str, object]:
        async with Client(build_server(index, Router(index, None))) as client:
            result = await client.session.call_tool("search_tools", {"query": "anything"})
            text = "".join(getattr(block, "text", "") for block in result.content)
            return result.is_error, text, result.structured_content

    error, text, structured = anyio.run(ask)
    assert not error and structured == {"result": []}
    assert text.startswith("no tool fits this query (no tool shares a word with it)")


@LOCAL_EXTRA
def test_serve_starts_loading_a_torch_free_model_early_only_when_it_scores_with_it() -> None:
    """``load_model_early``: MiniLM without torch loads in a thread of its own from the start
    (its load overlaps serve's imports); not for settings without a dense weight (``--method
    bm25`` loads no model), nor for sentence-transformers (its imports slowed the start)."""
    import time

    from workbench.search.embedders import LocalEmbedder
    from workbench.search.holo.settings import DEFAULT_WEIGHTS, HoloSettings
    from workbench.serve.index import load_model_early

    lexical = HoloSettings(weights={**DEFAULT_WEIGHTS, "dense": 0.0, "server_text": 0.0})
    idle = LocalEmbedder("all-MiniLM-L6-v2")
    load_model_early(lexical, idle)
    torch_backed = LocalEmbedder("all-MiniLM-L6-v2", backend="sentence-transformers")
    load_model_early(HoloSettings(), torch_backed)
    torch_free = LocalEmbedder("all-MiniLM-L6-v2")
    load_model_early(HoloSettings(), torch_free)
    deadline = time.monotonic() + 30
    while not torch_free.loaded and time.monotonic() < deadline:
        time.sleep(0.02)
    assert torch_free.loaded
    assert not idle.loaded and not torch_backed.loaded
    load_model_early(HoloSettings(), None)  # no embedder: nothing to load
