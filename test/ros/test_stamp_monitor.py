"""ros_helpers.StampMonitor, which the launch tests time themselves by: fed the CDR bytes of a simulator
that falls behind and skips 2 s of its 1 kHz stream, it reports what was published, not the wall time."""

from __future__ import annotations

import math
import os
import struct
import sys

import pytest

pytest.importorskip("rclpy")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ros_helpers import StampMonitor  # noqa: E402

ORIGIN_S = 1_795_000_000.0
"""The first stamp (the simulator's origin: the system clock at its start), s."""
ARRIVAL_S = 50.0
"""The monotonic time the first message arrives at, s."""


class _Node:
    def create_subscription(self, msg_type, topic, callback, qos, raw=False):
        assert raw
        self.callback = callback


def _cdr(stamp_s: float, little_endian: bool = True) -> bytes:
    """The start of a serialised stamped message: encapsulation header, header.stamp, then anything."""
    ns = round(stamp_s * 1e9)
    head = b"\x00\x01\x00\x00" if little_endian else b"\x00\x00\x00\x00"
    return head + struct.pack("<iI" if little_endian else ">iI", ns // 10**9, ns % 10**9) + b"\x00" * 16


def _monitor(skip=(4.0, 6.0), duration_s=10.0, rate_hz=1000.0, little_endian=True):
    node = _Node()
    monitor = StampMonitor(node, None, "/joint_states")
    for k in range(int(duration_s * rate_hz)):
        t = k / rate_hz
        if skip[0] <= t < skip[1]:
            continue
        node.callback(_cdr(ORIGIN_S + t, little_endian))
        monitor._arrivals[-1] = ARRIVAL_S + t  # arrived when published
    return monitor


def test_what_was_published_not_the_wall_time():
    monitor = _monitor()
    assert monitor.sample_time() == pytest.approx(8.0, abs=2e-3)  # 10 s of stamps, 2 s of them skipped
    assert monitor.sample_time(until_stamp=ORIGIN_S + 5.0) == pytest.approx(4.0, abs=2e-3)
    assert monitor.rate_hz() == pytest.approx(800.0, rel=1e-3)  # distinct stamps over their span
    assert monitor.rate_hz(since=ARRIVAL_S, until=ARRIVAL_S + 3.0) == pytest.approx(1000.0, rel=1e-6)
    assert monitor.real_time_factor(until=ARRIVAL_S + 10.0) == pytest.approx(0.8, abs=1e-3)


def test_big_endian_and_duplicates():
    monitor = _monitor(skip=(0.0, 0.0), duration_s=1.0, little_endian=False)
    assert monitor.sample_time() == pytest.approx(0.999, abs=1e-6)
    monitor._on_message(_cdr(ORIGIN_S + 0.5, little_endian=False))  # the same sample again counts once
    assert monitor.rate_hz() == pytest.approx(1000.0, rel=1e-6)


def test_nothing_yet():
    monitor = StampMonitor(_Node(), None, "/joint_states")
    assert monitor.sample_time() == 0.0
    assert math.isnan(monitor.rate_hz())
    assert math.isnan(monitor.real_time_factor())
    assert monitor.stretch(30.0) == 30.0
