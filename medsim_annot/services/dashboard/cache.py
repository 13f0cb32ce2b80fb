"""The dashboard's one cache helper: a small thread-safe least-recently-used map.

Three caches use it (:mod:`medsim_annot.services.dashboard.store`); their sizes are stated
there with the reason for each. Keys always start with the database URL (password hidden),
so two databases in one process never share an entry.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Event as Signal  # (the name Event is the event log's)
from typing import Generic, TypeVar

V = TypeVar("V")


class LRUCache(Generic[V]):
    """At most *size* values by key; the least recently used one goes out first.

    ``get_or_make(key, make)`` returns the kept value or calls *make* (outside the lock, so a
    slow computation never blocks readers of other keys) and keeps its result. A thread
    missing a key that another thread is making waits for that result instead of computing
    it a second time (the dashboards warmed after a server start,
    :mod:`medsim_annot.services.dashboard.warm`: an admin who opens the Dashboard while its
    warm-up runs waits for the rest of that computation, not for a second one beside it on
    the same cores). When the making thread fails, a waiting thread makes the value itself.

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
        #: The keys being made now, each with the signal set once its maker is done.
        self._making: dict[Hashable, Signal] = {}

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
        """The kept value of *key*, or ``make()`` kept under *key*; while another thread
        makes *key*, its result (see the class's docstring)."""
        return self.get_or_make_told(key, make)[0]

    def get_or_make_told(self, key: Hashable, make: Callable[[], V]) -> tuple[V, bool]:
        """:meth:`get_or_make`, and whether this call made the value (False: it was kept,
        or another thread made it meanwhile)."""
        while True:
            with self._lock:
                if key in self._data:
                    self._data.move_to_end(key)
                    self.hits += 1
                    return self._data[key], False
                making = self._making.get(key)
                if making is None:
                    self.misses += 1
                    making = self._making[key] = Signal()
                    break
            making.wait()  # then kept (or its maker failed: made here on the next turn)
        try:
            return self.put(key, make()), True
        finally:
            with self._lock:
                self._making.pop(key, None)
            making.set()

    def making(self, key: Hashable) -> bool:
        """Whether a thread is making *key* now."""
        with self._lock:
            return key in self._making

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
