"""The estimator node's processing loop, in a thread of its own (ROS-free).

Every turn takes the inputs that arrived (the node's ``take``: from the middleware into its input
queue) and runs one turn of the node (``turn``: drain the queue into the supervisor, publish what it
returns). A turn is due every :func:`loop_period` (at most :data:`LOOP_PERIOD_S`, 100 ms of input, less
to publish faster than 10 Hz or while ``~/identify`` moves the arm); the Driver processes by the inputs'
stamps whatever a turn holds, so the estimate does not depend on the period. A turn that ends after
the next was due skips the missed ones (as an rclpy timer does): after a rebuild of the stream or on a
loaded PC there is no burst of catching up.

Out of the node's executor, a turn costs no wait-set rebuild and no task: the executor wakes only for
services, the action, parameters and the 1 Hz diagnostics. Times are the monotonic clock, s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from payload_estimator.pipeline.driver import PROCESS_PERIOD_S, SHORTEST_PROCESS_PERIOD_S

__all__ = ["ProcessingLoop", "loop_period", "LOOP_PERIOD_S", "MOVING_LOOP_PERIOD_S"]

LOOP_PERIOD_S = PROCESS_PERIOD_S
"""Longest period of the node's loop, s: one Driver turn (100 ms of input: one turn per estimate at the
default 10 Hz), or less to publish faster than ``1 / LOOP_PERIOD_S``. The Driver processes by the inputs'
stamps whatever a turn holds, so the estimate does not depend on the period. Each turn costs the stream
a fixed share, so longer turns cost less (:data:`~payload_estimator.pipeline.driver.PROCESS_PERIOD_S`;
with the whole node under ROS, ``benchmarks/node_cpu.py`` ``--case NAME:loop_period_s=...``)."""
MOVING_LOOP_PERIOD_S = 0.05
"""The loop's longest period while ``~/identify`` moves the arm, s: its checks of the motion (the arm
following the trajectory sent, the wrench within the sensor's range) stop the arm within a turn."""


def loop_period(settings: Any, longest_s: float = LOOP_PERIOD_S, moving: bool = False) -> float:
    """The loop's period, s: ``longest_s``, or shorter to publish at the settings' ``publish_rate_hz``.

    At most :data:`MOVING_LOOP_PERIOD_S` while the node moves the arm; never shorter than the Driver's
    shortest turn (:data:`~payload_estimator.pipeline.driver.SHORTEST_PROCESS_PERIOD_S`).

    Args:
        settings: the node's settings (None, or no ``publish_rate_hz``: ``longest_s``).
        longest_s: the longest period, s.
        moving: whether the node moves the arm now (``~/identify``).
    """
    rate = getattr(settings, "publish_rate_hz", 0.0) or 0.0
    longest = min(longest_s, MOVING_LOOP_PERIOD_S) if moving else longest_s
    return max(SHORTEST_PROCESS_PERIOD_S, min(longest, 1.0 / rate if rate > 0 else longest))


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
