"""One least-recently-used map for every cache of values that are computed elsewhere and kept.

The engines' rankings and query vectors, serve's engine's signals, the embedder's query vectors
and the dashboard's rankings all keep the last ones asked for; a function whose result is the
value kept uses :func:`functools.lru_cache` instead.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A small thread-safe least-recently-used map of at most ``size`` items, whose keys'
    ``weight`` (their query's length) adds up to at most ``budget``."""

    def __init__(
        self, size: int, weight: Callable[[K], int] = lambda _: 0, budget: int = 0
    ) -> None:
        self._size = size
        self._weight = weight
        self._budget = budget
        self._held = 0
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is held (its place in the order stays as it is)."""
        with self._lock:
            return key in self._items

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            if key not in self._items:
                self._held += self._weight(key)
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size or (
                self._budget and self._held > self._budget and len(self._items) > 1
            ):
                old, _ = self._items.popitem(last=False)
                self._held -= self._weight(old)

    @property
    def held(self) -> int:
        """The weight of the keys held (their query characters)."""
        return self._held
