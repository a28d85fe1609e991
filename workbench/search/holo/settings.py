"""The engine's settings: one typed model, read from the file ``serve --settings`` takes.

The file is JSON (what ``tune --runtime serve --json`` prints: the settings themselves, or that
whole report, whose ``settings`` key holds them). Every key is optional; a key not given keeps the
default. A bad value is one line naming the file, the line and the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from workbench.config.yamltree import YamlSyntaxError, parse
from workbench.errors import InputError
from workbench.search.holo.fusion import SIGNALS
from workbench.search.holo.text import FIELDS

#: Weight of each signal by default: dense first, BM25 at half, the name at half, the derived
#: signals off until the tuner finds they earn their place.
DEFAULT_WEIGHTS: dict[str, float] = {
    "dense": 1.0,
    "lexical": 0.5,
    "name": 0.5,
    "neighbour": 0.0,
    "server": 0.0,
    "cost": 0.0,
    "server_text": 0.0,
}
#: How many times each field's words count in the lexical document (0: left out of both).
DEFAULT_FIELDS: dict[str, int] = {"server": 1, "name": 2, "description": 1, "parameters": 1}
MAX_TOP_K = 100
MAX_FIELD_WEIGHT = 5
#: A settings file larger than this is not a settings file.
MAX_SETTINGS_BYTES = 1024 * 1024


@dataclass(frozen=True)
class HoloSettings:
    """How holo-tune's engine ranks and what one search returns.

    - ``weights``: each signal's weight in the fusion (:data:`~.fusion.SIGNALS`);
    - ``fields``: each document field's weight (:data:`~.text.FIELDS`);
    - ``top_k``: the most tools a search returns; ``max_tokens``: the most tool tokens it returns
      (tools in ranked order while they fit); at least one is set;
    - ``threshold``: below this confidence (the best tool's cosine, or without embeddings the
      share of the query's words the best tool has) a search answers that no tool fits;
    - ``name_first``: tools the query names outright come first;
    - ``pins``: tools listed beside ``search_tools`` (full or bare names);
    - ``embedder``: what scores the dense signal (``--embedder``'s spec; None: no dense signal);
    - ``cases``: the labelled cases the neighbour signal reads (a path, relative to the file).
    """

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    fields: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_FIELDS))
    top_k: int | None = 5
    max_tokens: int | None = None
    threshold: float | None = None
    name_first: bool = True
    pins: tuple[str, ...] = ()
    embedder: str | None = None
    cases: str | None = None

    def __post_init__(self) -> None:
        weights = {**{k: 0.0 for k in SIGNALS}, **dict(self.weights)}
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "fields", {**{k: 0 for k in FIELDS}, **dict(self.fields)})
        object.__setattr__(self, "pins", tuple(self.pins))
        for name, value in weights.items():
            if name not in SIGNALS:
                raise InputError(
                    f"unknown signal (known: {', '.join(SIGNALS)})", field=f"weights.{name}"
                )
            if not math.isfinite(value) or not -10.0 <= value <= 10.0:
                raise InputError("must be a number between -10 and 10", field=f"weights.{name}")
        for name, value in self.fields.items():
            if name not in FIELDS:
                raise InputError(
                    f"unknown field (known: {', '.join(FIELDS)})", field=f"fields.{name}"
                )
            if not 0 <= value <= MAX_FIELD_WEIGHT:
                raise InputError(
                    f"must be a whole number from 0 to {MAX_FIELD_WEIGHT}", field=f"fields.{name}"
                )
        if not any(self.fields.values()):
            raise InputError("at least one field must count", field="fields")
        if self.top_k is None and self.max_tokens is None:
            raise InputError("one of top_k and max_tokens must be set", field="top_k")
        if self.top_k is not None and not 1 <= self.top_k <= MAX_TOP_K:
            raise InputError(f"must be from 1 to {MAX_TOP_K}", field="top_k")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InputError("must be at least 1", field="max_tokens")
        if self.threshold is not None and not (
            math.isfinite(self.threshold) and -1 <= self.threshold <= 1
        ):
            raise InputError("must be a number from -1 to 1", field="threshold")

    @property
    def fields_key(self) -> tuple[tuple[str, int], ...]:
        """The field weights as a hashable key (one lexical index and one set of tool vectors
        per key)."""
        return tuple((name, int(self.fields[name])) for name in FIELDS)

    def with_(self, **changes: Any) -> HoloSettings:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["weights"] = {k: float(self.weights[k]) for k in SIGNALS}
        out["fields"] = {k: int(self.fields[k]) for k in FIELDS}
        out["pins"] = list(self.pins)
        return {"engine": "holo", **out}


_KEYS = {
    "weights",
    "fields",
    "top_k",
    "max_tokens",
    "threshold",
    "name_first",
    "pins",
    "embedder",
    "cases",
    "engine",
}


def read_settings(path: str | Path) -> HoloSettings:
    """The settings in ``path`` (see the module's doc), or an :class:`InputError` naming it."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as err:
        raise InputError(
            f"cannot read the settings file ({err.strerror or err})", file=file
        ) from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise InputError(f"larger than {MAX_SETTINGS_BYTES} bytes: not a settings file", file=file)
    try:
        text = raw.decode("utf-8")
        tree = parse(text)
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=file) from None
    except YamlSyntaxError as err:
        last = text.count("\n") + (0 if text.endswith("\n") else 1)
        at = min(err.line0 + 1, max(last, 1)) if err.line0 is not None else None
        raise InputError(f"not JSON: {err.cause}", file=file, line=at) from None
    data: Any = tree.data
    prefix: tuple[str, ...] = ()
    if isinstance(data, dict) and isinstance(data.get("settings"), dict):
        data, prefix = data["settings"], ("settings",)

    def line(*keys: str) -> int | None:
        found = tree.line0_of((*prefix, *keys)) if keys else None
        return found + 1 if found is not None else None

    if not isinstance(data, dict):
        raise InputError("must be a JSON object of settings", file=file, line=1)
    try:
        return settings_from(data)
    except InputError as err:
        where = err.field.split(".") if err.field else []
        at = line(*where) or line(*where[:1])
        raise InputError(err.message, file=file, line=at, field=err.field) from None


def settings_from(data: Mapping[str, Any]) -> HoloSettings:
    """Settings from a parsed object (unknown keys and wrong types refused)."""
    for key in data:
        if key not in _KEYS:
            raise InputError(
                f"unknown key (known: {', '.join(sorted(_KEYS - {'engine'}))})", field=str(key)
            )
    if data.get("engine", "holo") != "holo":
        raise InputError(
            "these are not holo-tune engine settings (engine must be 'holo')", field="engine"
        )
    kwargs: dict[str, Any] = {}
    for key in ("weights", "fields"):
        if key in data:
            value = data[key]
            if not isinstance(value, dict):
                raise InputError("must be an object", field=key)
            for name, number in value.items():
                if isinstance(number, bool) or not isinstance(number, int | float):
                    raise InputError("must be a number", field=f"{key}.{name}")
                if key == "fields" and number != int(number):
                    raise InputError("must be a whole number", field=f"{key}.{name}")
            kwargs[key] = {
                str(k): (int(v) if key == "fields" else float(v)) for k, v in value.items()
            }
    for key in ("top_k", "max_tokens"):
        if key in data:
            value = data[key]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InputError("must be a whole number or null", field=key)
            kwargs[key] = value
    if "threshold" in data:
        value = data["threshold"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError("must be a number or null", field="threshold")
        kwargs["threshold"] = None if value is None else float(value)
    if "name_first" in data:
        if not isinstance(data["name_first"], bool):
            raise InputError("must be true or false", field="name_first")
        kwargs["name_first"] = data["name_first"]
    if "pins" in data:
        pins = data["pins"]
        if not isinstance(pins, list) or not all(isinstance(p, str) and p for p in pins):
            raise InputError("must be a list of tool names", field="pins")
        kwargs["pins"] = tuple(pins)
    for key in ("embedder", "cases"):
        if key in data:
            value = data[key]
            if value is not None and (not isinstance(value, str) or not value):
                raise InputError("must be a string or null", field=key)
            kwargs[key] = value
    return HoloSettings(**kwargs)
