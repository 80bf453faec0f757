"""The bounded queue between message callbacks and the processing timer."""

from __future__ import annotations

import threading

import pytest

from payload_estimator.node.input_queue import InputQueue


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
