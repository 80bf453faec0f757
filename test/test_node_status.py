"""The estimator node's own diagnostic status (ROS-free)."""

from __future__ import annotations

from payload_estimator.supervision.status import (
    CONFIGURATION_ERROR,
    RUNNING,
    WAITING_DESCRIPTION,
    NodeStatus,
    node_status_fields,
)


def test_levels_and_messages():
    waiting = node_status_fields(NodeStatus(WAITING_DESCRIPTION, "on /robot_description"), "payload_estimator")
    assert waiting["level"] == 1 and waiting["name"] == "payload_estimator: node"
    assert waiting["message"] == "waiting for robot_description: on /robot_description"
    error = node_status_fields(NodeStatus(CONFIGURATION_ERROR, "wrench frame 'x' exists nowhere"), "n")
    assert error["level"] == 2 and "exists nowhere" in error["message"]
    ok = node_status_fields(NodeStatus(RUNNING, "", {"robot": "panda"}), "n")
    assert ok["level"] == 0 and {"key": "robot", "value": "panda"} in ok["values"]


def test_queue_overflow_warns():
    f = node_status_fields(NodeStatus(RUNNING), "n", {"wrench": 12, "imu": 0})
    assert f["level"] == 1 and "12 wrench" in f["message"]
    assert {"key": "queue overflow wrench", "value": "12"} in f["values"]
