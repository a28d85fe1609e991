"""serve run as a service over HTTP: whether it is ready, its drain on SIGTERM, its metrics.

:class:`Operation` is what ``/healthz``, ``/readyz`` and ``/metrics`` (added by
:mod:`~workbench.serve.server`) answer from, and what the drain gate counts:

- ready: the index is loaded (serve answers HTTP only once it is), the embedding model its
  queries need is loaded (a local model loads in a thread after serve starts answering: until
  then a search would wait seconds for it, so a balancer should send it elsewhere; a model that
  failed to load keeps the replica not ready), serve is not draining, and
  every server ``--ready-needs`` names is up; ``/readyz``'s body says which servers are up. A
  needed server that is down is started again in the background (when its backoff allows), so a
  replica that became not ready for it becomes ready again without a call;
- the drain: once SIGTERM comes, every new MCP request is refused (503) and ``/readyz`` says not
  ready, the requests in flight finish (up to :data:`DRAIN_SECONDS`), then the transport ends
  and the servers stop (:mod:`~workbench.serve.app`);
- the metrics: ``prometheus-client``'s text format from a registry of this server's own (never
  the process-wide one), the servers' state read when scraped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import anyio
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from workbench.search.embedders.local import own_model
from workbench.serve.index import ServeIndex
from workbench.serve.upstream import Upstream, UpstreamPool

#: Seconds a drain waits for the requests in flight before the transport ends anyway (under
#: Kubernetes' default grace period of 30 s, after which it kills the process).
DRAIN_SECONDS = 25.0
#: The paths the drain gate lets through while draining (probes and scrapes).
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
#: A call's outcome, as ``holo_tune_calls_total`` labels it: the tool's result, the tool's own
#: error result (``isError``), or refused by serve (unknown tool, bad arguments, server down,
#: timeout: what the client gets as an MCP error).
RESULT, ERROR_RESULT, REFUSED = "result", "error_result", "refused"
#: The ``upstream`` label of a call no server owns (an unknown name, or served from a snapshot).
NO_UPSTREAM = "-"
#: ``holo_tune_search_seconds``' buckets: a search takes a few ms without embeddings, tens with
#: a local model, seconds while the model loads.
SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def upstream_state(upstream: Upstream) -> str:
    """``up``, ``starting`` (not yet answered, or starting again) or ``down``."""
    if upstream.up:
        return "up"
    if upstream.status.state in ("pending", "connecting"):
        return "starting"
    return "down"


class Operation:
    """The state ``/readyz`` and ``/metrics`` report and the drain gate keeps."""

    def __init__(
        self, index: ServeIndex, pool: UpstreamPool | None, needs: Sequence[str] = ()
    ) -> None:
        self.index = index
        self.pool = pool
        self.needs = tuple(needs)
        self.draining = False
        #: Why the embedding model failed to load (set by serve's loading thread), else None.
        self.model_error: str | None = None
        self.in_flight = 0
        self._idle: anyio.Event | None = None
        #: Ends the transport (set by the HTTP runner once it runs).
        self.stop_transport: Callable[[], None] | None = None
        self.registry = CollectorRegistry()
        self._searches = Histogram(
            "holo_tune_search_seconds",
            "search_tools' time to answer (refused searches too)",
            buckets=SEARCH_BUCKETS,
            registry=self.registry,
        )
        self._refused = Counter(
            "holo_tune_searches_refused",
            "searches answered 'no tool fits' (the confidence below the threshold)",
            registry=self.registry,
        )
        self._calls = Counter(
            "holo_tune_calls",
            "tool calls by the server that owns the tool and their outcome",
            ["upstream", "outcome"],
            registry=self.registry,
        )
        self._call_seconds = Histogram(
            "holo_tune_call_seconds",
            "a tool call's time, forwarded to its server and back",
            ["upstream"],
            buckets=CALL_BUCKETS,
            registry=self.registry,
        )
        self._turned_away = Counter(
            "holo_tune_requests_refused",
            "MCP requests refused with 503 because serve was draining",
            registry=self.registry,
        )
        self.registry.register(_StateCollector(self))

    # -- readiness ---------------------------------------------------------------------------
    def upstreams(self) -> dict[str, str]:
        """Each server's state (:func:`upstream_state`), by name; none from a snapshot."""
        pool = self.pool
        return {up.name: upstream_state(up) for up in pool.upstreams} if pool else {}

    def model(self) -> str | None:
        """The embedding model's state: ``loaded``, ``loading`` or ``failed: WHY``; None when
        the queries need no model loaded here (no embedder, or one behind an API)."""
        own = own_model(self.index.engine.embedder)
        if own is None:
            return None
        if self.model_error is not None:
            return f"failed: {self.model_error}"
        return "loaded" if own.loaded else "loading"

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether serve is ready, and ``/readyz``'s body: ``ready``, ``draining``, the index's
        ``tools``, the embedding ``model``'s state (:meth:`model`), each server's state
        (``upstreams``), what ``--ready-needs`` names (``needs``) and which of those are not up
        (``missing``). A needed server that is down is started again in the background, when
        its backoff allows."""
        upstreams = self.upstreams()
        missing = [name for name in self.needs if upstreams.get(name) != "up"]
        if self.pool is not None:
            for name in missing:
                upstream = self.pool.get(name)
                if upstream is not None and upstreams[name] == "down":
                    self.pool.revive(upstream)
        model = self.model()
        ready = not self.draining and not missing and model in (None, "loaded")
        body = {
            "ready": ready,
            "draining": self.draining,
            "tools": len(self.index.catalog),
            "model": model,
            "upstreams": upstreams,
            "needs": list(self.needs),
            "missing": missing,
        }
        return ready, body

    # -- the drain ---------------------------------------------------------------------------
    def enter(self) -> bool:
        """A request begins: False (refuse it) while draining."""
        if self.draining:
            self._turned_away.inc()
            return False
        self.in_flight += 1
        return True

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0 and self._idle is not None:
            self._idle.set()

    async def drain(self, seconds: float = DRAIN_SECONDS) -> int:
        """Refuse new requests and wait until those in flight have finished (at most
        ``seconds``); the number still in flight (0 unless the wait ran out)."""
        self.draining = True
        if self.in_flight:
            self._idle = anyio.Event()
            with anyio.move_on_after(seconds):
                await self._idle.wait()
        return self.in_flight

    # -- metrics -----------------------------------------------------------------------------
    def searched(self, seconds: float, refused: bool) -> None:
        self._searches.observe(seconds)
        if refused:
            self._refused.inc()

    def called(self, upstream: str, outcome: str, seconds: float) -> None:
        self._calls.labels(upstream=upstream, outcome=outcome).inc()
        self._call_seconds.labels(upstream=upstream).observe(seconds)

    def exposition(self) -> bytes:
        """``/metrics``' body (Prometheus' text format)."""
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """What is read when scraped: the servers' up/down and restarts, the index's size, the
    drain."""

    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    def collect(self) -> Iterable[Metric]:
        op = self.operation
        up = GaugeMetricFamily(
            "holo_tune_upstream_up", "1 while the server's session is open", labels=["upstream"]
        )
        restarts = CounterMetricFamily(
            "holo_tune_upstream_restarts",
            "times the server was started again after it went down",
            labels=["upstream"],
        )
        for upstream in op.pool.upstreams if op.pool else ():
            up.add_metric([upstream.name], 1.0 if upstream.up else 0.0)
            restarts.add_metric([upstream.name], float(max(0, len(upstream.runs) - 1)))
        yield up
        yield restarts
        yield GaugeMetricFamily(
            "holo_tune_index_tools",
            "tools in the index search_tools answers from",
            value=len(op.index.catalog),
        )
        yield GaugeMetricFamily(
            "holo_tune_draining",
            "1 once SIGTERM came: new requests are refused",
            value=1.0 if op.draining else 0.0,
        )
        yield GaugeMetricFamily(
            "holo_tune_requests_in_flight", "MCP requests being answered", value=op.in_flight
        )
