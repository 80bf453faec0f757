"""~/apply against a gravity-compensation node, and its refusals.

The real target, ros2_control's control_toolbox GravityCompensation filter, is
C++ and is not built in this environment; a plain rclpy node declaring its two
parameters (``tool.mass``, kg; ``tool.CoG``, m, in the filter's sensor frame)
stands in for it: ``~/apply`` only talks to its standard
``<node>/set_parameters`` service, which every node has. In a filter chain
(force_torque_sensor_broadcaster's ``sensor_filter_chain``) the controller's
node holds them behind the chain's prefix: a second stand-in declares them so.
Without franka_msgs, the test checks that ``~/apply`` names the missing
package and that ``dry_run`` still returns the request (with it, and with
xarm_msgs: test_vendor_apply_launch.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")

from rcl_interfaces.msg import SetParametersResult  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from ros_helpers import Listener, RunPublisher, call, payload_shape, wait_for  # noqa: E402

from payload_estimator.msg import PayloadEstimate  # noqa: E402
from payload_estimator.srv import ApplyEstimate  # noqa: E402

FILTER_NODE = "ft_gravity_compensation"


def _apply(node, force=False, dry_run=False, ns="/payload_estimator"):
    return call(node, ApplyEstimate, f"{ns}/apply", ApplyEstimate.Request(force=force, dry_run=dry_run))


def _estimating(ros, harness_node, **parameters):
    node = ros.estimator(payload_shape=payload_shape(), **parameters)
    listener = Listener(harness_node)
    listener.listen(PayloadEstimate, "/payload_estimator/estimate")
    pub = RunPublisher(harness_node, duration=6.0)
    pub.publish_description()
    assert wait_for(lambda: node.supervisor.stream is not None, 10.0), node.supervisor.status.message
    pub.publish(6.0, pace=3.0)
    assert wait_for(lambda: listener.last.get("/payload_estimator/estimate"), 15.0)
    return node, listener, pub


def test_apply_sets_the_gravity_compensation_parameters(ros):
    gc = ros.node(FILTER_NODE)  # stands in for control_toolbox's GravityCompensation filter
    gc.declare_parameter("tool.mass", 0.0)
    gc.declare_parameter("tool.CoG", [0.0, 0.0, 0.0])
    seen = []
    gc.add_on_set_parameters_callback(lambda ps: (seen.extend(ps), SetParametersResult(successful=True))[1])

    helper = ros.node("apply_test")
    node, listener, pub = _estimating(ros, helper, apply_target="gravity_compensation",
                                      gravity_compensation_node=f"/{FILTER_NODE}")
    estimate = listener.last["/payload_estimator/estimate"]

    dry = _apply(helper, dry_run=True, force=True)
    assert dry.success, dry.message
    assert dry.request.startswith(f"# rcl_interfaces/srv/SetParameters on /{FILTER_NODE}/set_parameters")
    names = [p["name"] for p in yaml.safe_load(dry.request)["parameters"]]
    assert names == ["tool.mass", "tool.CoG"]
    assert gc.get_parameter("tool.mass").value == 0.0  # a dry run sends nothing

    response = _apply(helper, force=True)
    assert response.success, response.message
    assert "applied" in response.message
    mass = gc.get_parameter("tool.mass").value
    cog = np.asarray(gc.get_parameter("tool.CoG").value)
    assert mass > 0 and abs(mass - estimate.mass) < 0.05 * estimate.mass
    assert abs(mass - pub.run.payload_params.mass) < 0.05 * pub.run.payload_params.mass
    assert np.linalg.norm(cog - pub.run.payload_params.com) < 0.02
    assert {p.name for p in seen} == {"tool.mass", "tool.CoG"}

    # the filter in force_torque_sensor_broadcaster's chain: its parameters behind the chain's prefix
    chain = "sensor_filter_chain.filter1.params."
    broadcaster = ros.node("force_torque_sensor_broadcaster")
    broadcaster.declare_parameter(f"{chain}tool.mass", 0.0)
    broadcaster.declare_parameter(f"{chain}tool.CoG", [0.0, 0.0, 0.0])
    node.set_parameters([Parameter("gravity_compensation_node", value="/force_torque_sensor_broadcaster"),
                         Parameter("gravity_compensation_prefix", value=chain)])
    in_chain = _apply(helper, force=True)
    assert in_chain.success, in_chain.message
    assert "/force_torque_sensor_broadcaster/set_parameters" in in_chain.message
    assert broadcaster.get_parameter(f"{chain}tool.mass").value == pytest.approx(mass, rel=0.05)
    assert np.linalg.norm(np.asarray(broadcaster.get_parameter(f"{chain}tool.CoG").value) - cog) < 0.02
    node.set_parameters([Parameter("gravity_compensation_node", value=f"/{FILTER_NODE}"),
                         Parameter("gravity_compensation_prefix", value="")])

    # the filter refusing is reported as a failure with its reason
    gc.add_on_set_parameters_callback(lambda ps: SetParametersResult(successful=False, reason="filter busy"))
    refused = _apply(helper, force=True)
    assert not refused.success and "filter busy" in refused.message

    # no such node: a clear failure, not a hang
    node.set_parameters([Parameter("gravity_compensation_node", value="/nobody_here")])
    absent = _apply(helper, force=True)
    assert not absent.success and "not available" in absent.message
    assert not ros.errors, ros.errors


def test_apply_refusals_and_missing_robot_packages(ros):
    helper = ros.node("apply_refusals")
    node, listener, _ = _estimating(ros, helper, apply_target="franka", max_payload_mass=3.0)

    dry = _apply(helper, dry_run=True, force=True)
    assert dry.success, dry.message
    fields = yaml.safe_load(dry.request)
    assert dry.request.startswith("# franka_msgs/srv/SetLoad on /service_server/set_load")
    assert set(fields) == {"mass", "center_of_mass", "load_inertia"} and len(fields["load_inertia"]) == 9

    try:
        import franka_msgs  # noqa: F401
    except ImportError:
        sent = _apply(helper, force=True)
        assert not sent.success and "franka_msgs is not installed" in sent.message and sent.request

    node.set_parameters([Parameter("max_payload_mass", value=0.1)])  # a live parameter
    over = _apply(helper, force=True, dry_run=True)
    assert not over.success and "exceeds" in over.message

    node.set_parameters([Parameter("apply_target", value="none")])
    none = _apply(helper, dry_run=True)
    assert not none.success and "apply_target" in none.message
    assert not ros.errors, ros.errors
