r"""The bounded queue between a node's inputs and its processing loop (ROS-free).

What arrives is :meth:`InputQueue.put` with its receive time: taken from the
middleware in bulk at the start of each turn of the node's processing loop, or
by subscription callbacks where rclpy cannot take in bulk. Each turn then
:meth:`InputQueue.drain`\ s everything in arrival order into the
:class:`~payload_estimator.pipeline.stream.EstimationStream`. The queue is
bounded so that a stalled consumer cannot exhaust memory: when full, the oldest
message is dropped and counted per stream, and the consumer reports the count
(:meth:`InputQueue.take_overflow`).

Receive times are on the monotonic clock (s). Where messages are taken from
the middleware in bulk rather than one callback each, :class:`ReceiveClock`
turns the middleware's timestamps (system clock, ns) into that clock.

``put`` and ``drain`` are each safe against the other running in another
thread (``collections.deque`` appends and pops are atomic in CPython); the
overflow counters assume one producer thread at a time (the loop's own, or the
one executor thread that runs the callbacks).
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from payload_estimator.errors import ConfigurationError

__all__ = ["InputQueue", "DEFAULT_QUEUE_LENGTH", "ReceiveClock", "MAX_TRANSIT_NS"]

DEFAULT_QUEUE_LENGTH = 10_000
"""About 3 s of 1 kHz joint states, wrench and IMU together."""
MAX_TRANSIT_NS = 500_000_000
"""A publisher's source timestamp at most this much before the middleware's receive (or take) time
is trusted as the message's send time on this machine's clock, ns."""


class InputQueue:
    """Messages in arrival order, at most ``maxlen`` of them.

    Args:
        maxlen: capacity; when full, :meth:`put` drops the oldest message.
    """

    def __init__(self, maxlen: int = DEFAULT_QUEUE_LENGTH) -> None:
        if maxlen < 1:
            raise ConfigurationError("maxlen must be at least 1")
        self._items: deque[tuple[str, Any, float]] = deque(maxlen=int(maxlen))
        self._overflow: dict[str, int] = {}

    @property
    def maxlen(self) -> int:
        """The capacity: messages held at most."""
        return int(self._items.maxlen or 0)

    def __len__(self) -> int:
        return len(self._items)

    def put(self, kind: str, msg: Any, wall_time: float) -> None:
        """Append one message of stream ``kind`` received at ``wall_time`` (s, monotonic clock)."""
        if len(self._items) == self._items.maxlen:
            try:
                oldest = self._items[0][0]
            except IndexError:  # drained meanwhile
                oldest = kind
            self._overflow[oldest] = self._overflow.get(oldest, 0) + 1
        self._items.append((kind, msg, wall_time))

    def drain(self) -> list[tuple[str, Any, float]]:
        """Remove and return every queued ``(kind, msg, wall_time)``, oldest first."""
        out = []
        pop = self._items.popleft
        for _ in range(len(self._items)):
            try:
                out.append(pop())
            except IndexError:
                break
        return out

    def take_overflow(self) -> dict[str, int]:
        """Messages dropped because the queue was full, per stream, since the last call."""
        counts, self._overflow = self._overflow, {}
        return counts

    def clear(self) -> None:
        """Drop every queued message (the overflow counts are kept)."""
        self._items.clear()


@dataclass(frozen=True)
class ReceiveClock:
    """The system clock (ns, the middleware's message timestamps) and the monotonic clock (s), read together.

    A message's receive time is the middleware's ``received_timestamp`` (some
    middlewares, Cyclone DDS among them, report the time it was *taken*, which
    in bulk is the same for a whole batch); when the publisher's
    ``source_timestamp`` lies at most :data:`MAX_TRANSIT_NS` before it (a publisher
    on this machine or on a synchronised clock), the send time is used instead, so
    that consecutive messages keep distinct, ordered times. A timestamp of 0 (not
    reported) falls back to the reading itself.
    """

    system_ns: int
    monotonic: float

    @classmethod
    def now(cls) -> ReceiveClock:
        """Both clocks as they read at this moment."""
        return cls(time.time_ns(), time.monotonic())

    def receive_time(self, source_ns: int, received_ns: int) -> float:
        """The monotonic time, s, of a message with these middleware timestamps (system clock, ns)."""
        t = received_ns if received_ns > 0 else self.system_ns
        if source_ns > 0 and 0 <= t - source_ns <= MAX_TRANSIT_NS:
            t = source_ns
        return self.monotonic + (t - self.system_ns) * 1e-9
