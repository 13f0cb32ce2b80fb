"""The dashboard's one cache helper: a small thread-safe least-recently-used map.

Three caches use it (:mod:`medsim_annot.services.dashboard.store`); their sizes are stated
there with the reason for each. Keys always start with the database URL (password hidden),
so two databases in one process never share an entry.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class LRUCache(Generic[V]):
    """At most *size* values by key; the least recently used one goes out first.

    ``get_or_make(key, make)`` returns the kept value or calls *make* (outside the lock, so a
    slow computation never blocks readers of other keys) and keeps its result. Two threads
    missing the same key both compute it; the later result is kept (both are equal: the key
    names everything the value depends on).

    >>> c = LRUCache[int]("demo", 2)
    >>> c.get_or_make("a", lambda: 1), c.get_or_make("b", lambda: 2), c.get_or_make("a", lambda: 9)
    (1, 2, 1)
    >>> c.get_or_make("c", lambda: 3)  # "b" is now the least recently used: it goes out
    3
    >>> sorted(c.keys()), c.hits, c.misses
    (['a', 'c'], 1, 3)
    """

    def __init__(self, name: str, size: int):
        if size < 1:
            raise ValueError(f"cache {name!r}: size must be at least 1, not {size}")
        self.name = name
        self.size = size
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The kept value of *key* (now the most recently used), or None."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
            return None

    def put(self, key: Hashable, value: V) -> V:
        """Keep *value* under *key*, dropping the least recently used beyond :attr:`size`."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The kept value of *key*, or ``make()`` kept under *key*."""
        found = self.get(key)
        return self.put(key, make()) if found is None else found

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
