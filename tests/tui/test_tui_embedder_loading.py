"""The first query after start loads the local embedding model (seconds): the status line says
so while it loads, set from the scoring worker through a message."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from tui_helpers import research_app, shown

import workbench.tui.dashboard.session as session_module
from workbench.search.embedders import EmbedderChoice
from workbench.search.embedders.cache import ToolEmbeddingCache, text_key
from workbench.search.embedders.local import model_to_load
from workbench.search.types import FloatArray
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screenshots import settle
from workbench.workspace import build_workspace

SIZE = (120, 36)
MODEL = "local:slow-model"
PATIENCE = 30.0


class SlowModel:
    """A local-model stand-in: the first embedding loads it, and the test says when that ends."""

    spec = MODEL
    model_id = MODEL

    def __init__(self) -> None:
        self.release = threading.Event()
        self.loaded = False

    def embed(self, texts: Sequence[str]) -> FloatArray:
        if not self.loaded:
            assert self.release.wait(PATIENCE), "the test never let the model load"
            self.loaded = True
        return np.asarray([[len(t) % 7 + 1.0, 1.0, float(i % 3)] for i, t in enumerate(texts)])


def _through(model: SlowModel, cache: ToolEmbeddingCache) -> Callable[..., Any]:
    """build_workspace with ``model`` as the embedder, its tool vectors already on disk (as on
    every start after the first: only the query's embedding loads the model)."""

    def build(agent: Any, catalog: Any, **kw: Any) -> Any:
        texts = [tool.search_text for tool in catalog.tools]
        cache.put(MODEL, {text_key(t): np.asarray([1.0, float(len(t) % 5), 1.0]) for t in texts})
        choice = EmbedderChoice(
            embedder=model, spec=MODEL, model_id=MODEL, runtime=MODEL, cache=cache
        )
        return build_workspace(agent, catalog, embedder=choice)

    return build


def _status(app: Any) -> str:
    return shown(app.screen.query_one("#lab-status"))


async def _until(pilot: Pilot[None], check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PATIENCE
    while not check():
        assert time.monotonic() < deadline, "the dashboard never got there"
        await pilot.pause(0.02)


async def test_the_status_says_the_model_loads_during_the_first_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = SlowModel()
    cache = ToolEmbeddingCache(tmp_path / "vectors")
    monkeypatch.setattr(session_module, "build_workspace", _through(model, cache))
    app = research_app(tmp_path)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)  # the tools' vectors come from the cache: no model loaded
            screen = app.screen
            assert isinstance(screen, DashboardScreen) and screen.lab is not None
            assert screen.lab.workspace.engine.prepared and not model.loaded
            assert "type a query" in _status(app)
            await pilot.press(*"papers")
            await _until(pilot, lambda: "loading" in _status(app))
            assert f"loading embedding model {MODEL}…" in _status(app)
            model.release.set()
            await settle(pilot)
            assert "scored by" in _status(app) and MODEL in _status(app)
    finally:
        model.release.set()


def test_model_to_load_looks_through_wrappers() -> None:
    model = SlowModel()

    class Wrapper:
        inner = model

    assert model_to_load(Wrapper()) == MODEL
    model.loaded = True
    assert model_to_load(Wrapper()) is None
    assert model_to_load(object()) is None and model_to_load(None) is None


class PreloadedModel(SlowModel):
    """A model that can be loaded ahead of its first embedding (``load()``, as a local model)."""

    def __init__(self) -> None:
        super().__init__()
        self.load_started = threading.Event()

    def load(self) -> None:
        self.load_started.set()
        assert self.release.wait(PATIENCE), "the test never let the model load"
        self.loaded = True


async def test_the_model_loads_in_the_background_from_the_start_and_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tools' vectors come from the cache, yet the model loads at once (not on the first
    query), the status line saying so until it is ready."""
    model = PreloadedModel()
    cache = ToolEmbeddingCache(tmp_path / "vectors")
    monkeypatch.setattr(session_module, "build_workspace", _through(model, cache))
    app = research_app(tmp_path)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await _until(pilot, lambda: model.load_started.is_set())
            await _until(pilot, lambda: "loading" in _status(app))
            assert _status(app).strip() == f"loading embedding model {MODEL}…"
            assert not model.loaded
            model.release.set()
            await settle(pilot)
            assert model.loaded and "type a query" in _status(app)
            await pilot.press(*"papers")
            await settle(pilot)
            assert "scored by" in _status(app) and MODEL in _status(app)
    finally:
        model.release.set()
