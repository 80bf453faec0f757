"""The bounded queue between message callbacks and the processing timer."""

from __future__ import annotations

import threading

import pytest

from payload_estimator.supervision.input_queue import InputQueue


def test_arrival_order_and_drain():
    q = InputQueue(10)
    q.put("joint_states", 1, 0.1)
    q.put("wrench", 2, 0.2)
    q.put("joint_states", 3, 0.3)
    assert [m for _, m, _ in q.drain()] == [1, 2, 3]
    assert q.drain() == [] and len(q) == 0


def test_overflow_drops_oldest_and_counts_per_stream():
    q = InputQueue(3)
    for i, kind in enumerate(["wrench", "joint_states", "joint_states", "wrench", "wrench"]):
        q.put(kind, i, float(i))
    assert [m for _, m, _ in q.drain()] == [2, 3, 4]
    assert q.take_overflow() == {"wrench": 1, "joint_states": 1}
    assert q.take_overflow() == {}


def test_concurrent_put_and_drain_lose_nothing():
    q = InputQueue(1_000_000)
    got = []
    done = threading.Event()

    def producer():
        for i in range(50_000):
            q.put("wrench", i, 0.0)
        done.set()

    t = threading.Thread(target=producer)
    t.start()
    while not done.is_set() or len(q):
        got.extend(m for _, m, _ in q.drain())
    t.join()
    assert got == list(range(50_000))


def test_bad_length():
    with pytest.raises(ValueError):
        InputQueue(0)


def test_receive_times_are_send_times_when_the_publisher_shares_the_clock():
    from payload_estimator.supervision.input_queue import MAX_TRANSIT_NS, ReceiveClock

    clock = ReceiveClock(system_ns=1_000_000_000_000, monotonic=50.0)
    # taken now (Cyclone DDS reports the take time), sent 3 ms and 2 ms ago: the send times, distinct and ordered
    taken = clock.system_ns
    assert clock.receive_time(taken - 3_000_000, taken) == pytest.approx(49.997, abs=1e-9)
    assert clock.receive_time(taken - 2_000_000, taken) == pytest.approx(49.998, abs=1e-9)
    # a middleware that reports when the message arrived: that time when the sender's clock is off
    arrived = taken - 1_000_000
    assert clock.receive_time(arrived + 5_000_000, arrived) == pytest.approx(49.999, abs=1e-9)  # sender ahead
    assert clock.receive_time(arrived - MAX_TRANSIT_NS - 1, arrived) == pytest.approx(49.999, abs=1e-9)  # far behind
    # nothing reported: the reading itself
    assert clock.receive_time(0, 0) == 50.0


def test_receive_clock_reads_both_clocks_together():
    import time

    from payload_estimator.supervision.input_queue import ReceiveClock

    clock = ReceiveClock.now()
    assert abs(clock.receive_time(time.time_ns(), time.time_ns()) - time.monotonic()) < 0.05
