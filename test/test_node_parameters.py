"""What the estimator node refuses of a parameter change, and what it subscribes to, without ROS
(:func:`parameters_refusal`, :func:`subscribed_inputs`)."""

from __future__ import annotations

from payload_estimator.settings import settings_for_robot
from payload_estimator.supervision.parameters import parameters_refusal, subscribed_inputs


def test_a_change_that_makes_no_valid_settings_is_refused_with_the_reason():
    values = settings_for_robot("panda").to_dict()
    assert parameters_refusal(values) is None
    reason = parameters_refusal({**values, "estimator": "x"})
    assert reason is not None and "estimator" in reason


def test_a_node_without_a_wrench_subscription_keeps_the_joint_torques():
    values = settings_for_robot("panda", "joint_torques").to_dict()
    assert parameters_refusal(values, wrench_subscribed=False) is None
    reason = parameters_refusal({**values, "wrench_source": "ft_sensor"}, wrench_subscribed=False)
    assert reason == ("the node started with wrench_source joint_torques and has no wrench subscription: "
                      "restart it to use another wrench source")
    assert parameters_refusal({**values, "wrench_source": "ft_sensor"}, wrench_subscribed=True) is None


def test_the_inputs_are_the_joint_states_the_wrench_unless_from_efforts_and_the_imu_when_named():
    values = settings_for_robot("panda").to_dict()
    assert subscribed_inputs(values) == {"joint_states": values["joint_states_topic"],
                                         "wrench": values["wrench_topic"]}
    torques = settings_for_robot("panda", "joint_torques").to_dict()
    assert subscribed_inputs(torques) == {"joint_states": torques["joint_states_topic"]}
    assert subscribed_inputs({**values, "imu_topic": "/imu"})["imu"] == "/imu"
