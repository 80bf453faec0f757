"""The estimator node's processing loop without ROS: :mod:`payload_estimator.supervision.processing_loop`.

The loop runs in a thread on the real monotonic clock; the bounds leave room for a loaded machine."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from payload_estimator.pipeline.driver import SHORTEST_PROCESS_PERIOD_S
from payload_estimator.supervision.processing_loop import (
    LOOP_PERIOD_S,
    MOVING_LOOP_PERIOD_S,
    ProcessingLoop,
    loop_period,
)


def test_the_period_is_100_ms_or_the_publish_period_50_ms_moving_never_shorter_than_a_driver_turn():
    assert LOOP_PERIOD_S == pytest.approx(0.1)
    assert loop_period(None) == LOOP_PERIOD_S
    assert loop_period(SimpleNamespace(publish_rate_hz=10.0)) == LOOP_PERIOD_S
    assert loop_period(SimpleNamespace(publish_rate_hz=25.0)) == pytest.approx(0.04)
    assert loop_period(SimpleNamespace(publish_rate_hz=10.0), moving=True) == MOVING_LOOP_PERIOD_S == 0.05
    assert loop_period(SimpleNamespace(publish_rate_hz=25.0), moving=True) == pytest.approx(0.04)
    assert loop_period(SimpleNamespace(publish_rate_hz=1000.0)) == SHORTEST_PROCESS_PERIOD_S
    assert loop_period(SimpleNamespace(publish_rate_hz=0.0)) == LOOP_PERIOD_S
    assert loop_period(SimpleNamespace(publish_rate_hz=10.0), longest_s=0.02) == pytest.approx(0.02)


def run_for(loop: ProcessingLoop, seconds: float) -> threading.Thread:
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    time.sleep(seconds)
    loop.shutdown()
    thread.join(timeout=2.0)
    assert not thread.is_alive()
    return thread


def test_each_turn_takes_the_inputs_first_then_runs_at_the_period():
    events: list[tuple[str, float]] = []
    loop = ProcessingLoop(lambda: events.append(("turn", time.monotonic())), lambda: 0.02, lambda: True,
                          take=lambda: events.append(("take", time.monotonic())))
    run_for(loop, 0.5)
    kinds = [k for k, _ in events]
    assert kinds[0::2] == ["take"] * len(kinds[0::2]) and kinds[1::2] == ["turn"] * len(kinds[1::2])
    turns = [t for k, t in events if k == "turn"]
    assert 10 <= len(turns) <= 26  # 25 due in 0.5 s
    assert min(b - a for a, b in zip(turns, turns[1:])) > 0.005  # never in a burst


def test_an_error_taking_the_inputs_is_reported_and_the_turn_runs():
    errors, turns = [], []

    def take():
        raise RuntimeError("the middleware went away")

    loop = ProcessingLoop(lambda: turns.append(1), lambda: 0.01, lambda: True, take=take,
                          on_error=lambda what, exc: errors.append((what, str(exc))))
    run_for(loop, 0.2)
    assert turns and len(errors) == len(turns)
    assert errors[0] == ("taking input", "the middleware went away")


def test_the_loop_ends_when_the_node_stops_running():
    turns = []
    loop = ProcessingLoop(lambda: turns.append(1), lambda: 0.01, lambda: len(turns) < 5)
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    thread.join(timeout=2.0)
    assert not thread.is_alive() and len(turns) == 5


def test_a_shutdown_ends_a_long_wait_at_once():
    loop = ProcessingLoop(lambda: None, lambda: 10.0, lambda: True)
    start = time.monotonic()
    run_for(loop, 0.05)
    assert time.monotonic() - start < 1.0


def test_a_loop_that_fell_behind_does_not_catch_up():
    """A turn that takes four periods: the turns it missed are skipped, not run back to back."""
    turns: list[float] = []

    def turn():
        turns.append(time.monotonic())
        if len(turns) == 3:
            time.sleep(0.2)

    loop = ProcessingLoop(turn, lambda: 0.05, lambda: True, longest_s=0.05)
    run_for(loop, 0.6)
    gaps = [b - a for a, b in zip(turns[3:], turns[4:])]
    assert gaps and min(gaps) > 0.02
