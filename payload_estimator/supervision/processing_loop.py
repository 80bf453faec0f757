"""The estimator node's processing loop, in a thread of its own (ROS-free).

Every turn takes the inputs that arrived (the node's ``take``: from the middleware into its input
queue) and runs one turn of the node (``turn``: drain the queue into the supervisor, publish what it
returns). A turn is due every :func:`loop_period` (at most :data:`LOOP_PERIOD_S`, 50 ms of input, less
to publish faster than 20 Hz); the Driver processes by the inputs' stamps whatever a turn holds, so
the estimate does not depend on the period. A turn that ends after the next was due skips the missed
ones (as an rclpy timer does): after a rebuild of the stream or on a loaded PC there is no burst of
catching up.

Out of the node's executor, a turn costs no wait-set rebuild and no task: the executor wakes only for
services, the action, parameters and the 1 Hz diagnostics. Times are the monotonic clock, s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from payload_estimator.pipeline.driver import PROCESS_PERIOD_S, SHORTEST_PROCESS_PERIOD_S

__all__ = ["ProcessingLoop", "loop_period", "LOOP_PERIOD_S"]

LOOP_PERIOD_S = PROCESS_PERIOD_S
"""Longest period of the node's loop, s: one Driver turn (50 ms of input), or less to publish faster than
``1 / LOOP_PERIOD_S``. The Driver processes by the inputs' stamps whatever a turn holds, so the estimate
does not depend on the period. Each turn costs the stream a fixed share, so longer turns cost less: at
1 kHz + 1 kHz the whole process took 33 % of a core with 10 ms turns, 26 % with 20 ms, 23 % with 40 ms
and 21 % with 50 ms (benchmarks/node_cpu.py ``loop_period_s=...``, an idle 2-core machine; measured on an
older release whose estimates cost more, so the shares are higher than today's, their order the same)."""


def loop_period(settings: Any, longest_s: float = LOOP_PERIOD_S) -> float:
    """The loop's period, s: ``longest_s``, or shorter to publish at the settings' ``publish_rate_hz``.

    It is never shorter than the Driver's shortest turn
    (:data:`~payload_estimator.pipeline.driver.SHORTEST_PROCESS_PERIOD_S`).

    Args:
        settings: the node's settings (None, or no ``publish_rate_hz``: ``longest_s``).
        longest_s: the longest period, s.
    """
    rate = getattr(settings, "publish_rate_hz", 0.0) or 0.0
    return max(SHORTEST_PROCESS_PERIOD_S, min(longest_s, 1.0 / rate if rate > 0 else longest_s))


class ProcessingLoop:
    """Runs ``turn`` every ``period()`` s until stopped or ``running()`` turns false (module docstring).

    Args:
        turn: one turn of the node (it reports its own errors).
        period: the period now, s (read before each turn: a parameter change takes effect at once).
        running: whether the node still runs (False ends the loop).
        take: called first in every turn to take the inputs that arrived; None: they arrive by
            themselves (callbacks that fill the queue).
        on_error: ``on_error(what, exc)`` for an exception of ``take`` (the turn runs all the same).
        longest_s: the longest period, s: a loop that fell further behind than this starts afresh.
    """

    def __init__(self, turn: Callable[[], None], period: Callable[[], float], running: Callable[[], bool],
                 take: Callable[[], Any] | None = None,
                 on_error: Callable[[str, Exception], None] | None = None,
                 longest_s: float = LOOP_PERIOD_S) -> None:
        self._turn = turn
        self._period = period
        self._running = running
        self._take = take
        self._on_error = on_error
        self._longest_s = float(longest_s)
        self._stop = threading.Event()

    def run(self) -> None:
        """Loop until :meth:`shutdown` or ``running()`` is false (the body of the loop's thread)."""
        due = time.monotonic()
        while self._running():
            due += self._period()
            wait = due - time.monotonic()
            if wait < -self._longest_s:
                due = time.monotonic()  # fell behind (a rebuild, a loaded PC): no catching up
            elif wait > 0 and self._stop.wait(wait):
                return
            if self._stop.is_set():
                return
            if self._take is not None:
                try:
                    self._take()
                except Exception as exc:  # noqa: BLE001 - shutting down, or a bug: the node keeps running
                    if self._on_error is not None:
                        self._on_error("taking input", exc)
            self._turn()

    def shutdown(self) -> None:
        """End the loop (its current turn finishes first)."""
        self._stop.set()
