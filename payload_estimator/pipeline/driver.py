"""The one driver loop: feed what arrived, process every 100 ms, estimate at the publish rate.

The ROS node (its 10 Hz input loop), ``replay`` (a bag in record order) and
playback of simulated runs (``demo``, benchmarks) all run a stream the same
way, through :class:`Driver`:

* a processing turn every ``process_period_s`` (100 ms, or the publish period when shorter) of the
  inputs' clock
  (wall time on the robot, record time in a bag) pushes whatever arrived
  since the last turn into the stream and runs :meth:`EstimationStream.process`;
* the first turn at or after each multiple of ``publish_period_s`` also solves
  for the estimate (:meth:`EstimationStream.update_estimate`), which is what
  the node publishes, a replay prints and a history records. On a clock whose
  turns are exact (bags, playback) that is every ``publish_period_s /
  process_period_s``-th turn; on a loaded robot PC, where a timer drops turns
  it missed, the estimate still comes at ``publish_period_s``.

How arrived items enter the stream is the caller's ``feed`` function:
ROS messages go through :func:`payload_estimator.io.ros_inbound.feed_many`,
recorded arrays through the stream's ``push_*`` methods.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from payload_estimator.core.history import EstimateHistory
from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.stream import EstimationStream, StreamEstimate

__all__ = ["Driver", "PROCESS_PERIOD_S", "SHORTEST_PROCESS_PERIOD_S", "Feed"]

PROCESS_PERIOD_S = 0.1
"""Longest time between two processing turns, s: 100 ms of 1 kHz input per turn (the node's loop), one turn
per estimate at the default 10 Hz, shorter to publish faster. An estimate holds every sample that arrived
before it however the turns split them (the stream processes by the inputs' stamps; the payload tracker
judges a longer batch in 50 ms steps, ``core.tracking.STEP_S``, and decides by the samples' times), so a
turn per estimate publishes the same estimates, as fresh, as two did (on a replayed bag within 1e-5 of
each other). Each turn costs the stream a fixed share: at 1 kHz joint states + 1 kHz wrench, the node's
pipeline with PMD took 7.8 and 8.4 % of a core with 50 ms turns, 6.8 and 7.5 % with 100 ms
(``benchmarks/node_load.py --period``, two runs each, a loaded 2-core machine)."""
SHORTEST_PROCESS_PERIOD_S = 0.01
"""Shortest time between two processing turns, s: estimates come at most at 100 Hz."""

Feed = Callable[[EstimationStream, list], Any]
"""``feed(stream, items)``: push the items that arrived since the last turn into the stream."""


class Driver:
    """Runs a stream turn by turn (module docstring).

    Args:
        stream: the stream to drive.
        feed: how arrived items enter the stream.
        publish_period_s: time between two estimates, s (rounded to whole turns).
        process_period_s: longest time between two processing turns, s (the publish period when shorter,
            never under :data:`SHORTEST_PROCESS_PERIOD_S`).
        history: where to record every estimate (time since the first turn), or None.
        on_estimate: called with every estimate taken.
    """

    def __init__(
        self,
        stream: EstimationStream,
        feed: Feed,
        publish_period_s: float = 0.1,
        process_period_s: float = PROCESS_PERIOD_S,
        history: EstimateHistory | None = None,
        on_estimate: Callable[[StreamEstimate], None] | None = None,
    ) -> None:
        if process_period_s <= 0 or publish_period_s <= 0:
            raise ConfigurationError("periods must be positive")
        self.stream = stream
        self.feed = feed
        self.publish_period_s = max(float(publish_period_s), SHORTEST_PROCESS_PERIOD_S)
        self.process_period_s = max(min(float(process_period_s), self.publish_period_s), SHORTEST_PROCESS_PERIOD_S)
        self.history = history
        self.on_estimate = on_estimate
        self.t0: float | None = None
        self.ticks = 0
        self._pending: list = []
        self._last_t: float | None = None
        self._next_publish: float | None = None

    @property
    def last_time(self) -> float:
        """Time of the last pushed item (:meth:`push`), else of the first turn; 0 before any."""
        if self._last_t is not None:
            return self._last_t
        return self.t0 if self.t0 is not None else 0.0

    # ------------------------------------------------------------------ turns
    def tick(self, t: float, items: Iterable = ()) -> StreamEstimate | None:
        """Run one processing turn at time ``t``; return the estimate when one is due, else None.

        Feeds ``items`` (and anything pushed with :meth:`push`) and processes; when an estimate is
        due is in the module docstring."""
        self._feed_and_process(t, items)
        self.ticks += 1
        if self._publish_due(t):
            return self.take_estimate(t)
        return None

    def _publish_due(self, t: float) -> bool:
        """Tell whether ``t`` reached the next multiple of the publish period.

        With half the shortest turn's tolerance: record stamps near 1.7e9 s carry rounding far above a
        nanosecond, and the node loop's turns fall a few milliseconds off the publish grid when it is busy;
        a turn earlier than that waits for the next (with turns of a whole publish period, one that came
        half a period early would publish twice in it)."""
        t0, period = self.t0 if self.t0 is not None else t, self.publish_period_s
        if self._next_publish is None:
            self._next_publish = t0 + period
        tolerance = 0.5 * SHORTEST_PROCESS_PERIOD_S
        if t < self._next_publish - tolerance:
            return False
        self._next_publish = t0 + (math.floor((t - t0 + tolerance) / period) + 1) * period
        return True

    def push(self, t: float, item: Any) -> None:
        """Take an item that arrived at ``t`` (inputs in time order, as in a bag).

        The turns due before it run first, on the grid ``t0 + k * process_period_s``. Across a pause in the inputs
        longer than two publish periods the turns would only repeat themselves: they are skipped."""
        if self.t0 is None:
            self.t0 = t
        due = int((t - self.t0) / self.process_period_s)
        if (due - self.ticks) * self.process_period_s > 2 * self.publish_period_s:
            self.ticks = due - 1
        while t >= self.t0 + (self.ticks + 1) * self.process_period_s:
            self.tick(self.t0 + (self.ticks + 1) * self.process_period_s)
        self._pending.append(item)
        self._last_t = t

    def finish(self, t: float | None = None, items: Iterable = ()) -> StreamEstimate | None:
        """End the inputs: feed what is left (and ``items``), process, and take the final estimate.

        The estimate is at ``t``, default the last pushed item's time. A zero-phase stream is finished
        by its owner (:meth:`EstimationStream.finish`), who then calls :meth:`take_estimate`."""
        t = t if t is not None else self.last_time
        self._feed_and_process(t, items)
        return self.take_estimate(t)

    def _feed_and_process(self, t: float, items: Iterable) -> None:
        if self.t0 is None:
            self.t0 = t
        self._pending.extend(items)
        pending, self._pending = self._pending, []
        if pending:
            self.feed(self.stream, pending)
        self.stream.process()

    def take_estimate(self, t: float) -> StreamEstimate | None:
        """Solve for the estimate now (at time ``t``), record it and hand it to ``on_estimate``."""
        out = self.stream.update_estimate()
        if out is not None:
            if self.history is not None:
                self.history.append(t - (self.t0 if self.t0 is not None else t), out.estimate, out.converged,
                                    out.mass_com_converged)
            if self.on_estimate is not None:
                self.on_estimate(out)
        return out

    def reset(self) -> None:
        """Forget the clock and anything pending (the stream is reset by its owner)."""
        self.t0 = None
        self.ticks = 0
        self._pending = []
        self._last_t = None
        self._next_publish = None
