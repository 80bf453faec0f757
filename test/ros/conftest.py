"""The ``ros`` fixture of the ROS tests (see ros_helpers.py); nothing imports rclpy at import time."""

from __future__ import annotations

import pytest


@pytest.fixture
def ros():
    """A private rclpy context whose nodes spin in background threads."""
    from ros_helpers import RosHarness

    harness = RosHarness()
    yield harness
    harness.close()
