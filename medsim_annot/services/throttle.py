"""Guessing is slowed and seen: failed sign-ins counted per client and overall.

Each kind of secret (``admin`` passwords, annotator access ``code``\\ s) has its own
:class:`Throttle`. After a few free failures a client must wait an increasing delay
(doubling, capped) before its next attempt is even checked, and after
:attr:`Policy.lockout_after` failures it is locked out for :attr:`Policy.lockout_s`. The
overall count (every client together) adds its own doubling delay, so guessing spread over
many addresses is slowed too. Failures are forgotten :attr:`Policy.window_s` after the last
one; a success clears the client's count. Every failure writes one log line (kind, client,
counts, wait) and never the secret that was tried.

The counts live in the process (each app server keeps its own); the lockout therefore
holds per server, which the reverse proxy's sticky sessions keep per client.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("medsim_annot.signin")


class ThrottledError(Exception):
    """Too many failed attempts: try again after ``retry_after`` seconds."""

    def __init__(self, retry_after: float, *, locked: bool = False, busy: bool = False):
        self.retry_after = max(0.0, float(retry_after))
        self.locked = locked
        wait = math.ceil(self.retry_after)
        if busy:
            why = "too many sign-ins at once"
        else:
            why = "too many failed sign-ins: " + ("temporarily locked" if locked else "slowed down")
        super().__init__(f"{why}; try again in {wait} second{'s' * (wait != 1)}")


@dataclass(frozen=True)
class Policy:
    free_per_client: int = 3  # failures before any delay
    base_delay_s: float = 1.0  # first delay, doubled with each further failure
    max_delay_s: float = 60.0
    lockout_after: int = 10  # failures of one client -> lockout
    lockout_s: float = 900.0
    free_overall: int = 50  # failures of all clients together before the overall delay
    max_overall_delay_s: float = 30.0
    window_s: float = 900.0  # failures older than this (after the last one) are forgotten


@dataclass
class _Count:
    failures: int = 0
    last: float = 0.0
    not_before: float = 0.0
    locked_until: float = 0.0


def _delay(n: int, free: int, base: float, cap: float) -> float:
    if n < free:
        return 0.0
    return min(cap, base * 2.0 ** (n - free))


@dataclass
class Throttle:
    """Failure counts of one kind of secret, per client and overall (thread-safe)."""

    kind: str
    policy: Policy = field(default_factory=Policy)
    clock: Callable[[], float] = time.monotonic
    _clients: dict[str, _Count] = field(default_factory=dict, init=False, repr=False)
    _overall: _Count = field(default_factory=_Count, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _fresh(self, c: _Count, now: float) -> _Count:
        if c.failures and now - c.last > self.policy.window_s and now >= c.locked_until:
            c.failures, c.not_before, c.locked_until = 0, 0.0, 0.0
        return c

    def check(self, client: str) -> None:
        """Raise :class:`ThrottledError` if *client* may not try now (before checking a secret)."""
        now = self.clock()
        with self._lock:
            c = self._fresh(self._clients.setdefault(client, _Count()), now)
            o = self._fresh(self._overall, now)
            if c.locked_until > now:
                raise ThrottledError(c.locked_until - now, locked=True)
            wait = max(c.not_before, o.not_before) - now
        if wait > 0:
            raise ThrottledError(wait)

    def failure(self, client: str, *, detail: str = "") -> float:
        """Count a failed attempt of *client*; log it; return the wait before the next one."""
        p = self.policy
        now = self.clock()
        with self._lock:
            if len(self._clients) > 10_000:  # forget clients whose window has passed
                stale = [k for k, v in self._clients.items() if not self._fresh(v, now).failures]
                for key in stale:
                    del self._clients[key]
            c = self._fresh(self._clients.setdefault(client, _Count()), now)
            o = self._fresh(self._overall, now)
            c.failures += 1
            o.failures += 1
            c.last = o.last = now
            c.not_before = now + _delay(
                c.failures, p.free_per_client, p.base_delay_s, p.max_delay_s
            )
            o.not_before = now + _delay(o.failures, p.free_overall, 1.0, p.max_overall_delay_s)
            if c.failures >= p.lockout_after:
                c.locked_until = now + p.lockout_s
            wait = max(c.not_before, o.not_before, c.locked_until) - now
            n_client, n_overall, locked = c.failures, o.failures, c.locked_until > now
        log.warning(
            "failed %s sign-in: client=%s failures_client=%d failures_overall=%d wait_s=%.0f%s%s",
            self.kind,
            client,
            n_client,
            n_overall,
            max(wait, 0.0),
            " locked" if locked else "",
            f" {detail}" if detail else "",
        )
        return max(wait, 0.0)

    def success(self, client: str) -> None:
        """A correct secret: forget *client*'s failures (the overall count stays)."""
        with self._lock:
            self._clients.pop(client, None)

    def failures(self, client: str | None = None) -> int:
        """Failures counted for *client* (or overall) in the current window."""
        now = self.clock()
        with self._lock:
            if client is None:
                return self._fresh(self._overall, now).failures
            c = self._clients.get(client)
            return self._fresh(c, now).failures if c else 0

    def reset(self) -> None:
        with self._lock:
            self._clients.clear()
            self._overall = _Count()


ADMIN_SIGNINS = Throttle("admin")
CODE_SIGNINS = Throttle("access-code")
