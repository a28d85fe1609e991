"""Listing real MCP servers: stdio, streamable HTTP and SSE, pagination, every failure mode.

Each failure mode runs in one concurrent listing next to a working server (which must still
answer), and afterwards no process carrying the test's tag may be alive.
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT

from workbench.catalog.build import ServerListing, build_catalog
from workbench.catalog.mcp_client import list_servers
from workbench.catalog.models import ServerStatus
from workbench.catalog.serverlogs import new_log_dir
from workbench.catalog.specs import AgentTools, McpServerSpec
from workbench.evaluate.diagnostics import check_catalog

PY = sys.executable
TEST_SERVERS = Path(__file__).resolve().parent / "servers"
ProcessFinder = Callable[[str], list[int]]
TOOLSERVER = str(TEST_SERVERS / "toolserver.py")
MISBEHAVING = str(TEST_SERVERS / "misbehaving.py")


def _list(specs: list[McpServerSpec], tmp_path: Path, **kw: object) -> dict[str, ServerListing]:
    async def main() -> list[ServerListing]:
        return await list_servers(specs, log_dir=tmp_path, **kw)  # type: ignore[arg-type]

    return {r.status.name: r for r in anyio.run(main)}


def _stdio(name: str, *args: str, timeout: float = 30.0, **kw: object) -> McpServerSpec:
    return McpServerSpec(name=name, command=PY, args=args, request_timeout=timeout, **kw)  # type: ignore[arg-type]


def test_stdio_pagination_is_followed_to_the_last_page(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    spec = _stdio("paged", TOOLSERVER, "--tools", "7", "--page-size", "3", "--tag", tag)
    result = _list([spec], tmp_path)["paged"]
    assert result.status.state == "ok", result.status.error
    assert result.pages == 3
    assert [t["name"] for t in result.tools] == [f"tool_{i:02d}" for i in reversed(range(7))]
    assert result.tools[0]["inputSchema"]["required"] == ["query"]
    assert result.status.tools == 7 and result.status.log_path == tmp_path / "paged.log"
    assert find_processes(tag) == []


def test_a_servers_prompts_are_listed_and_noted(tmp_path: Path) -> None:
    """HoloDeck 0.6 (Semantic Kernel) registers an MCP server's prompts as functions its filter
    ranks beside the tools; holo-tune lists them and its catalog says so, not in silence."""
    specs = [
        _stdio("with", TOOLSERVER, "--tools", "2", "--prompts", "3"),
        _stdio("without", TOOLSERVER, "--tools", "2"),
    ]
    results = _list(specs, tmp_path)
    assert results["with"].prompts == ["prompt_00", "prompt_01", "prompt_02"]
    assert results["without"].prompts == []
    assert results["with"].status.tools == 2
    catalog = build_catalog(AgentTools(entries=()), list(results.values()))
    said = [note for note in catalog.notes if "prompt" in note]
    assert len(said) == 1 and said[0].startswith("with: the server also offers 3 prompt(s)")
    assert "prompt_00, prompt_01, prompt_02" in said[0]
    assert len(catalog.tools) == 4
    findings = {f.code: f for f in check_catalog(SimpleNamespace(catalog=catalog))}  # type: ignore[arg-type]
    assert findings["runtime-ranks-prompts"].severity == "warning"


def test_published_time_server_over_stdio(tmp_path: Path) -> None:
    result = _list([_stdio("time", "-m", "mcp_server_time")], tmp_path)["time"]
    assert result.status.state == "ok", result.status.error
    assert sorted(t["name"] for t in result.tools) == ["convert_time", "get_current_time"]


def test_stdio_env_is_the_entrys_over_a_minimal_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HoloDeck passes only the entry's env; the SDK adds HOME/PATH/...; the rest is not seen."""
    monkeypatch.setenv("HOLO_TUNE_PARENT_ONLY", "leaked")
    specs = [
        _stdio(
            "given", TOOLSERVER, "--tools", "0", "--echo-env", "PROBE", env={"PROBE": "from-entry"}
        ),
        _stdio("parent", TOOLSERVER, "--tools", "0", "--echo-env", "HOLO_TUNE_PARENT_ONLY"),
    ]
    results = _list(specs, tmp_path)
    assert results["given"].tools[0]["description"] == "PROBE=from-entry"
    assert results["parent"].tools[0]["description"] == "HOLO_TUNE_PARENT_ONLY=<unset>"


@pytest.fixture(scope="module")
def failures(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, ServerListing], str, list[str]]:
    """Every failure mode at once, next to a good server; the tag; the status states seen."""
    tag = f"holo-tune-fail-{time.monotonic_ns()}"
    quick = 1.5
    specs = [
        _stdio("good", TOOLSERVER, "--tag", tag),
        McpServerSpec(name="missing", command="holo-tune-no-such-command"),
        _stdio("exits", MISBEHAVING, "exit", "--tag", tag),
        _stdio("garbage", MISBEHAVING, "garbage", "--tag", tag),
        _stdio("garbage_hang", MISBEHAVING, "garbage-hang", "--tag", tag, timeout=quick),
        _stdio("hangs", MISBEHAVING, "hang", "--tag", tag, timeout=quick),
        _stdio("slow_list", TOOLSERVER, "--slow-list", "600", "--tag", tag, timeout=quick),
        _stdio("init_error", MISBEHAVING, "init-error", "--tag", tag),
        _stdio("grandchild", MISBEHAVING, "child-hang", "--tag", tag, timeout=quick),
        McpServerSpec(name="refused", transport="http", url=f"http://127.0.0.1:{_free_port()}/mcp"),
        McpServerSpec(name="websocket", transport="websocket", url="ws://127.0.0.1:1/"),
    ]
    seen: list[str] = []

    def on_status(status: ServerStatus) -> None:
        seen.append(f"{status.name}:{status.state}")

    results = _list(specs, tmp_path_factory.mktemp("logs"), on_status=on_status)
    return results, tag, seen


def test_other_servers_finish_while_some_fail(
    failures: tuple[dict[str, ServerListing], str, list[str]],
) -> None:
    results, _, _ = failures
    assert results["good"].status.state == "ok" and len(results["good"].tools) == 3
    assert {n for n, r in results.items() if r.status.state == "error"} == set(results) - {"good"}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("missing", "command not found: holo-tune-no-such-command"),
        ("exits", "closed the connection; stderr: 'fatal: missing configuration"),
        ("garbage", "non-JSON-RPC output on stdout: 'Server starting... hello there'"),
        ("garbage_hang", "no answer within 1.5 s; it wrote non-JSON-RPC output"),
        ("hangs", "no answer within 1.5 s"),
        ("slow_list", "no answer within 1.5 s"),
        ("init_error", "initialize failed: initialization refused by test server"),
        ("grandchild", "no answer within 1.5 s"),
        ("refused", "cannot connect to http://127.0.0.1:"),
        ("websocket", "websocket transport is not supported"),
    ],
)
def test_failure_is_reported_with_its_cause(
    failures: tuple[dict[str, ServerListing], str, list[str]], name: str, expected: str
) -> None:
    status = failures[0][name].status
    assert status.state == "error"
    assert status.error is not None and expected in status.error
    assert "\n" not in status.error
    assert status.log_path is not None and status.error in status.log_path.read_text()


def test_a_command_that_cannot_start_is_one_line_in_its_log(
    failures: tuple[dict[str, ServerListing], str, list[str]],
) -> None:
    """No Python traceback for a missing command (it said nothing a user can act on); a
    protocol failure keeps its traceback for whoever debugs the server."""
    missing = failures[0]["missing"].status
    assert missing.log_path is not None and missing.error is not None
    log = missing.log_path.read_text()
    assert "Traceback" not in log and log.strip() == f"[holo-tune] missing: {missing.error}"
    init = failures[0]["init_error"].status
    assert init.log_path is not None and "Traceback" in init.log_path.read_text()


def test_no_process_outlives_the_listing(
    failures: tuple[dict[str, ServerListing], str, list[str]], find_processes: ProcessFinder
) -> None:
    _, tag, _ = failures
    assert find_processes(tag) == []


def test_the_process_check_can_fail(tag: str, find_processes: ProcessFinder) -> None:
    proc = subprocess.Popen([PY, MISBEHAVING, "hang", "--tag", tag], stdin=subprocess.PIPE)
    try:
        # The child's command line shows the tag once it has exec'd: wait for that, not more.
        deadline = time.monotonic() + 10
        while find_processes(tag) != [proc.pid] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert find_processes(tag) == [proc.pid]
    finally:
        proc.kill()
        proc.wait()
    assert find_processes(tag) == []


def test_status_goes_pending_connecting_then_final(
    failures: tuple[dict[str, ServerListing], str, list[str]],
) -> None:
    seen = failures[2]
    good = [s for s in seen if s.startswith("good:")]
    assert good == ["good:pending", "good:connecting", "good:ok"]
    assert [s for s in seen if s.startswith("missing:")][-1] == "missing:error"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"test server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("test server did not start listening")


@pytest.fixture(scope="module", params=["http", "sse"])
def http_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A paginating test server over streamable HTTP or SSE on 127.0.0.1: (transport, url)."""
    transport = str(request.param)
    port = _free_port()
    args = [
        TOOLSERVER,
        "--transport",
        transport,
        "--port",
        str(port),
        "--tools",
        "5",
        "--page-size",
        "2",
    ]
    proc = subprocess.Popen([PY, *args])
    try:
        _wait_for_port(port, proc)
        path = "/mcp" if transport == "http" else "/sse"
        yield transport, f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_http_transports_list_every_page(http_server: tuple[str, str], tmp_path: Path) -> None:
    transport, url = http_server
    result = _list([McpServerSpec(name="remote", transport=transport, url=url)], tmp_path)["remote"]
    assert result.status.state == "ok", result.status.error
    assert result.pages == 3 and len(result.tools) == 5


def test_http_404_is_named(http_server: tuple[str, str], tmp_path: Path) -> None:
    """A wrong path on a live server (streamable HTTP's POST, SSE's GET of the event stream)."""
    transport, url = http_server
    wrong = url.rsplit("/", 1)[0] + "/nowhere"
    spec = McpServerSpec(name="r", transport=transport, url=wrong)
    status = _list([spec], tmp_path)["r"].status
    assert status.state == "error"
    # streamable HTTP fails on the initialize request; SSE before it, opening the event stream
    step = "initialize failed: " if transport == "http" else ""
    assert status.error == f"{step}HTTP 404 Not Found from {wrong}"


@pytest.fixture(scope="module")
def broken_http() -> Iterator[str]:
    """An HTTP server in this process that answers 500 to everything."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"boom")

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_500_is_named_for_both_transports(broken_http: str, tmp_path: Path) -> None:
    specs = [
        McpServerSpec(name="http", transport="http", url=f"{broken_http}/mcp", request_timeout=10),
        McpServerSpec(name="sse", transport="sse", url=f"{broken_http}/sse", request_timeout=10),
    ]
    results = _list(specs, tmp_path)
    for name in ("http", "sse"):
        error = results[name].status.error
        assert error is not None and "HTTP 500 Internal Server Error" in error, error


def test_log_dirs_are_per_run_and_old_ones_pruned(tmp_path: Path) -> None:
    runs = [new_log_dir(tmp_path) for _ in range(25)]
    assert len(set(runs)) == 25
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert len(kept) == 20 and runs[-1].name in kept and runs[0].name not in kept


def test_load_tools_false_starts_nothing(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    spec = _stdio("off", MISBEHAVING, "hang", "--tag", tag, load_tools=False)
    result = _list([spec], tmp_path)["off"]
    assert result.status.state == "ok" and result.tools == []
    assert find_processes(tag) == []


def test_one_after_another_gives_the_same_listing(tmp_path: Path) -> None:
    specs = [_stdio("a", TOOLSERVER, "--tools", "2"), _stdio("b", TOOLSERVER, "--tools", "1")]
    together = _list(specs, tmp_path)
    serial = _list(specs, tmp_path, concurrent=False)
    assert {n: r.tools for n, r in together.items()} == {n: r.tools for n, r in serial.items()}


@pytest.mark.parametrize(
    ("stderr", "picked"),
    [
        (
            "Traceback (most recent call last):\n  File 'x'\n"
            "    raise X\nModuleNotFoundError: no x\n",
            "ModuleNotFoundError: no x",
        ),
        (
            "npm error code ENOTCACHED\nnpm error request failed\n"
            "npm error A complete log of this run can be found in: /x\n",
            "npm error request failed",
        ),
        ("Error: A key is required\nInvalid configuration\n", "Error: A key is required"),
        ("starting\nlistening on nothing\n", "listening on nothing"),
    ],
)
def test_the_telling_stderr_line_is_quoted(tmp_path: Path, stderr: str, picked: str) -> None:
    from workbench.catalog.serverlogs import stderr_tail

    log = tmp_path / "s.log"
    log.write_text(stderr)
    assert stderr_tail(log) == f"; stderr: {picked!r}"


def _hanging(tag: str) -> list[McpServerSpec]:
    """Two servers that never answer (one with a grandchild), under a long deadline."""
    return [
        _stdio("hangs", MISBEHAVING, "hang", "--tag", tag, timeout=120),
        _stdio("child", MISBEHAVING, "child-hang", "--tag", tag, timeout=120),
    ]


async def _until_started(tag: str, find_processes: ProcessFinder, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(find_processes(tag)) < count:
        assert time.monotonic() < deadline, "the servers never started"
        await asyncio.sleep(0.05)


def test_a_cancelled_listing_stops_its_servers_at_once(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    """Cancelled (the dashboard quitting), the servers get SIGTERM at once: no waiting out the
    grace a server gets to exit on its own when its stdin closes."""

    async def main() -> float:
        task = asyncio.create_task(list_servers(_hanging(tag), log_dir=tmp_path))
        await _until_started(tag, find_processes, 3)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    took = asyncio.run(main())
    assert find_processes(tag) == []
    assert took < PROCESS_TERMINATION_TIMEOUT


def test_a_listing_the_event_loop_abandons_leaves_no_process(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    """Cancelled, then dropped before it has stopped (Textual cancels its workers on exit without
    waiting, and forgets them): the task is collected mid-shutdown, which cuts the SDK's
    shielded shutdown short; the servers are killed all the same."""

    async def main() -> None:
        task = asyncio.create_task(list_servers(_hanging(tag), log_dir=tmp_path))
        await _until_started(tag, find_processes, 3)
        task.cancel()
        del task  # nothing holds the task any more: it may be collected before the loop ends
        await asyncio.sleep(0.1)
        gc.collect()

    asyncio.run(main())
    assert find_processes(tag) == []


def test_the_sdk_process_spawn_is_tracked() -> None:
    """Quitting mid-listing kills each server's process group by the pid recorded when the SDK's
    stdio transport spawned it. The SDK does not hand the process out, so holo-tune wraps its
    (private) spawn function: if an mcp release renames it, this fails rather than the cleanup
    quietly falling back to the SDK's own."""
    import mcp.client.stdio as sdk_stdio

    import workbench.catalog.mcp_client  # noqa: F401  (installs the wrapper)

    spawn = getattr(sdk_stdio, "_create_platform_compatible_process", None)
    assert spawn is not None and getattr(spawn, "_holo_tune_tracked", False)


STDERR = Path(__file__).resolve().parent / "data" / "stderr"


@pytest.mark.parametrize(
    ("capture", "picked"),
    [
        (  # uv 0.13: the generic line first, the cause under it
            "uvx-not-found.txt",
            "cause: Because mcp-server-sqlitex was not found in the package registry and you "
            "require mcp-server-sqlitex, we can conclude that your requirements are "
            "unsatisfiable.",
        ),
        (  # older uv's tree, with a hint after the cause
            "uvx-not-found-fancy.txt",
            "╰─▶ Because mcp-server-calculatr was not found in the package registry and you "
            "require mcp-server-calculatr, we can conclude that your requirements are "
            "unsatisfiable.",
        ),
        ("uvx-certificate.txt", "cause: invalid peer certificate: UnknownIssuer"),
        ("uvx-certificate-caused-by.txt", "Caused by: invalid peer certificate: UnknownIssuer"),
        (  # npm 10: the 404's advice and the log's path are left out
            "npx-not-found.txt",
            "npm error 404  The requested resource '@modelcontextprotocol/server-everythng@*' "
            "could not be found or you do not have permission to access it.",
        ),
        (
            "npx-not-found-npm9.txt",
            "npm ERR! 404  '@modelcontextprotocol/server-sequential-thinkng@*' is not in this "
            "registry.",
        ),
        (
            "npx-certificate.txt",
            "npm error request to https://registry.npmjs.org/@modelcontextprotocol%2fserver-"
            "everything failed, reason: unable to get local issuer certificate",
        ),
        (  # Node's stack and its version line come after the error
            "node-module-not-found.txt",
            "Error: Cannot find module '/home/user/servers/everything/dist/index.js'",
        ),
    ],
)
def test_the_line_that_says_why_is_quoted(tmp_path: Path, capture: str, picked: str) -> None:
    """Captured stderr of uvx, npx and node failing to start a server: the quoted line is the
    cause (package not found, certificate), not the generic failure around it."""
    from workbench.catalog.serverlogs import stderr_tail

    log = tmp_path / "s.log"
    log.write_bytes((STDERR / capture).read_bytes())
    assert stderr_tail(log) == f"; stderr: {picked[:200]!r}"


def test_real_uvx_and_npx_failures_quote_their_cause(tmp_path: Path) -> None:
    """Real launchers that cannot start the server (offline, an empty cache, a package that
    does not exist): the failed server's line says the package was not found."""
    uvx = Path(sys.executable).with_name("uvx")
    npx = shutil.which("npx")
    if not uvx.exists() or npx is None:
        pytest.skip("needs uvx (the dev extra's uv) and npx")
    package = "holo-tune-test-no-such-server"
    specs = [
        McpServerSpec(
            name="uvx",
            command=str(uvx),
            args=("--offline", package),
            env={"UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_NO_CONFIG": "1"},
            request_timeout=30,
        ),
        McpServerSpec(
            name="npx",
            command=npx,
            args=("--offline", "-y", f"@holo-tune-test/{package}"),
            env={"npm_config_cache": str(tmp_path / "npm-cache")},
            request_timeout=30,
        ),
    ]
    results = _list(specs, tmp_path)
    uv_error = results["uvx"].status.error or ""
    assert f"stderr: 'cause: Because {package} was not found in the cache" in uv_error, uv_error
    npm_error = results["npx"].status.error or ""
    assert 'stderr: "npm error request to https://' in npm_error, npm_error
    assert "no cached response is available" in npm_error, npm_error
