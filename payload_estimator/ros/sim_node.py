"""A simulated robot arm holding a known payload, published as the real robot's drivers do.

At start-up the node simulates ``duration`` seconds of the ``robot`` carrying
``payload`` along ``trajectory`` (MuJoCo, :func:`~payload_estimator.sim.mujoco_sim.simulate`),
then publishes it in real time, looping (or holding the last sample):

* joint states on the robot's ``joint_states_topic`` (sensor_msgs/JointState, rad, rad/s, N m);
* the wrench on its ``wrench_topic``, in the convention of its configuration:
  the F/T sensor's reading for the xArm, Franka's external wrench in the
  stiffness frame (sign -1) for the Panda and FR3 (geometry_msgs/WrenchStamped);
* optionally an IMU (``~/imu``, sensor_msgs/Imu, frame ``imu_link``);
* ``robot_description`` (std_msgs/String, transient local) and tf: ``/tf_static``
  for the fixed joints, ``/tf`` for the others at ``tf_rate_hz`` (pinocchio
  forward kinematics of the published joint states);
* the truth, ``~/truth`` (geometry_msgs/InertiaStamped, latched, in the sensor frame);
* with ``publish_clock``, ``/clock`` (the stamps are then simulated time from 1 s;
  run the other nodes with ``use_sim_time``). Otherwise stamps are wall-clock time.

Topic names and the wrench convention come from the robot's preset
(:data:`~payload_estimator.robots.ROBOTS`), so that the estimator,
started with ``config/<robot>.yaml``, reads the simulation exactly as it
would read the robot.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
import rclpy
from geometry_msgs.msg import InertiaStamped, TransformStamped, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String
from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.live import IMU, JOINTS, WRENCH, LiveRun
from payload_estimator.sim.tf_tree import LinkTransform, UrdfTransforms

__all__ = ["SimNode", "main"]

NODE_NAME = "payload_sim"
PUBLISH_PERIOD_S = 0.004
"""Samples due are published every 4 ms (a 1 kHz stream goes out 4 messages at a time)."""
SIM_TIME_ORIGIN_S = 1.0
"""Simulated time of the first sample when publishing /clock (0 would read as "no stamp")."""

# Sensor streams as Franka's convenience topics publish them: best effort, keep last.
SENSOR_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                        reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

_PARAMETERS: tuple[tuple[str, Any, str], ...] = (
    ("robot", "panda", "robot model: panda, fr3, xarm7 or xarm6"),
    ("payload", "claw_hammer", "payload of the catalogue (payload_estimator.sim.payloads)"),
    ("scenario", "single", "single: the payload held throughout; cycle: picks and places of four payloads with "
                           "contacts (sim.cycle.arm_work_cycle; payload, trajectory and duration do not apply)"),
    ("trajectory", "paper004", "excitation: paper004, thesis or pickplace"),
    ("duration", 20.0, "simulated time before the run loops or holds, s"),
    ("noise", "moderate", "F/T noise level of paper 004 Table II: none, low, moderate, high"),
    ("seed", 0, "seed of every random draw"),
    ("loop", True, "replay the run again and again (else hold the last sample)"),
    ("rate_hz", 1000.0, "joint state (and IMU) rate, Hz"),
    ("wrench_rate_hz", 0.0, "wrench rate, Hz (0: rate_hz)"),
    ("imu", False, "also simulate and publish an IMU on ~/imu (frame imu_link)"),
    ("joint_states_topic", "", "where to publish joint states; empty: the robot's preset"),
    ("wrench_topic", "", "where to publish the wrench; empty: the robot's preset"),
    ("wrench_source", "", "wrench convention (ft_sensor, franka_base, franka_stiffness); empty: the preset"),
    ("publish_clock", False, "publish /clock (simulated time) and stamp with it"),
    ("tf_rate_hz", 50.0, "rate of /tf for the moving joints, Hz"),
)


class SimNode(Node):
    """Publishes a simulated run in real time (see the module docstring).

    Keyword arguments go to :class:`rclpy.node.Node`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        for name, default, description in _PARAMETERS:
            self.declare_parameter(name, default, ParameterDescriptor(description=description, read_only=True))
        p = {name: self.get_parameter(name).value for name, _, _ in _PARAMETERS}

        overrides = {k: p[k] for k in ("joint_states_topic", "wrench_topic", "wrench_source") if p[k]}
        settings = settings_for_robot(p["robot"], **overrides)
        self.get_logger().info(f"simulating {p['duration']:.0f} s of the {p['robot']} holding the {p['payload']} "
                               f"({p['trajectory']}, {p['noise']} noise, seed {p['seed']}) ...")
        from payload_estimator.sim.mujoco_sim import simulate

        t0 = time.perf_counter()
        rate_hz, wrench_rate_hz = float(p["rate_hz"]), float(p["wrench_rate_hz"]) or None
        if p["scenario"] == "cycle":
            from payload_estimator.sim.cycle import arm_work_cycle

            run = arm_work_cycle(p["robot"], seed=int(p["seed"])).simulate(
                noise=p["noise"], seed=int(p["seed"]), imu=bool(p["imu"]), rate_hz=rate_hz,
                wrench_rate_hz=wrench_rate_hz)
        elif p["scenario"] == "single":
            run = simulate(robot=p["robot"], payload=p["payload"], trajectory=p["trajectory"],
                           duration=float(p["duration"]), noise=p["noise"], seed=int(p["seed"]),
                           imu=bool(p["imu"]), rate_hz=rate_hz, wrench_rate_hz=wrench_rate_hz)
        else:
            raise ValueError(f"scenario must be single or cycle, got {p['scenario']!r}")
        self.live = LiveRun(run, settings, loop=bool(p["loop"]))
        self.run = run
        truth = run.payload_params
        self.get_logger().info(
            f"simulated in {time.perf_counter() - t0:.1f} s; payload mass {truth.mass:.4f} kg, COM "
            f"{np.round(truth.com, 4).tolist()} m in {run.sensor_frame}; publishing joint states on "
            f"{settings.joint_states_topic}, the {settings.wrench_source} wrench on {settings.wrench_topic} "
            f"(frame {self.live.wrench_frame_id})" + (", looping" if p["loop"] else ", then holding"))

        # ---- publishers
        self._joint_pub = self.create_publisher(JointState, settings.joint_states_topic, SENSOR_QOS)
        self._wrench_pub = self.create_publisher(WrenchStamped, settings.wrench_topic, SENSOR_QOS)
        self._imu_pub = self.create_publisher(Imu, "~/imu", SENSOR_QOS) if len(run.imu_t) else None
        self._clock_pub = self.create_publisher(ClockMsg, "/clock", 10) if p["publish_clock"] else None
        description_pub = self.create_publisher(String, "robot_description", LATCHED_QOS)
        truth_pub = self.create_publisher(InertiaStamped, "~/truth", LATCHED_QOS)
        self._truth_pub = truth_pub
        self._held_phi = run.payload_phi
        self._tf = TransformBroadcaster(self)
        self._tree = UrdfTransforms(run.urdf)

        # ---- what is published once
        self._origin = SIM_TIME_ORIGIN_S if self._clock_pub else self.get_clock().now().nanoseconds * 1e-9
        self._start = time.monotonic()
        factory = ros_factories.rclpy_factory()
        description_pub.publish(String(data=run.urdf))
        truth_pub.publish(ros_outbound.inertia_stamped_msg(factory, truth, run.sensor_frame, self._origin))
        self._static_tf = StaticTransformBroadcaster(self)
        self._static_tf.sendTransform([self._transform(t, self._origin) for t in self._tree.fixed()])
        self._last_joint: tuple[float, np.ndarray] | None = None

        # ---- real-time publishing on the steady clock (never on /clock, which this node drives)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(PUBLISH_PERIOD_S, self._publish_due, clock=steady)
        self.create_timer(1.0 / float(p["tf_rate_hz"]), self._publish_tf, clock=steady)

    # ----------------------------------------------------------------- stamps
    def _stamp(self, t_run: float) -> Any:
        return Time(nanoseconds=int(round((self._origin + t_run) * 1e9))).to_msg()

    def _transform(self, t: LinkTransform, t_abs: float) -> TransformStamped:
        msg = TransformStamped()
        msg.header.stamp = Time(nanoseconds=int(round(t_abs * 1e9))).to_msg()
        msg.header.frame_id = t.parent
        msg.child_frame_id = t.child
        msg.transform.translation.x, msg.transform.translation.y, msg.transform.translation.z = (
            float(v) for v in t.xyz)
        r = msg.transform.rotation
        r.x, r.y, r.z, r.w = (float(v) for v in t.quat_xyzw)
        return msg

    # -------------------------------------------------------------- publishing
    def _publish_due(self) -> None:
        """Publish every sample whose time has come (joint states, wrench, IMU), in time order per stream."""
        t_now = time.monotonic() - self._start
        due = self.live.due(t_now)
        run, live = self.run, self.live
        if self._clock_pub is not None:
            clock = ClockMsg()
            clock.clock = self._stamp(t_now)
            self._clock_pub.publish(clock)
        names = list(run.joint_names)
        joints = due[JOINTS]
        for i, t in zip(joints.index, joints.t):
            msg = JointState()
            msg.header.stamp = self._stamp(t)
            msg.name = names
            msg.position = run.joint_q[i].tolist()
            msg.velocity = run.joint_dq[i].tolist()
            msg.effort = run.joint_effort[i].tolist()
            self._joint_pub.publish(msg)
        if len(joints):
            self._last_joint = (float(joints.t[-1]), run.joint_q[joints.index[-1]])
            self._publish_truth_if_changed(int(joints.index[-1]), float(joints.t[-1]))
        wrench = due[WRENCH]
        for i, t in zip(wrench.index, wrench.t):
            msg = WrenchStamped()
            msg.header.stamp = self._stamp(t)
            msg.header.frame_id = live.wrench_frame_id
            f, tau = live.wrench_force[i], live.wrench_torque[i]
            msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = float(f[0]), float(f[1]), float(f[2])
            msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (
                float(tau[0]), float(tau[1]), float(tau[2]))
            self._wrench_pub.publish(msg)
        if self._imu_pub is not None and IMU in due:
            imu = due[IMU]
            for i, t in zip(imu.index, imu.t):
                msg = Imu()
                msg.header.stamp = self._stamp(t)
                msg.header.frame_id = run.imu_frame or ""
                msg.orientation_covariance[0] = -1.0  # no orientation
                w, a = run.imu_gyro_in_imu[i], run.imu_specific_force_in_imu[i]
                msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = (float(v) for v in w)
                msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = (
                    float(v) for v in a)
                self._imu_pub.publish(msg)

    def _publish_truth_if_changed(self, row: int, t: float) -> None:
        """A work cycle: ~/truth again when what the gripper holds has changed (zeros: empty)."""
        if not len(self.run.truth_change_t):
            return
        phi = self.run.phi_at(self.run.joint_t[row])[0]
        if np.array_equal(phi, self._held_phi):
            return
        self._held_phi = phi
        factory = ros_factories.rclpy_factory()
        self._truth_pub.publish(ros_outbound.inertia_stamped_msg(
            factory, InertialParameters(phi), self.run.sensor_frame, self._origin + t))

    def _publish_tf(self) -> None:
        """/tf of the moving joints at the last published joint state."""
        if self._last_joint is None:
            return
        t, q = self._last_joint
        self._tf.sendTransform([self._transform(x, self._origin + t)
                                for x in self._tree.moving(self.run.joint_names, q)])


def main(args: list[str] | None = None) -> None:
    """``ros2 run payload_estimator sim_node``."""
    rclpy.init(args=args)
    node = None
    try:
        node = SimNode()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        try:
            if node is not None:
                node.destroy_node()
        except KeyboardInterrupt:  # a second Ctrl-C while cleaning up
            pass
        rclpy.try_shutdown()
        # Exit at once: nothing is left to clean up, and the interpreter's last garbage collection
        # of every module's objects (numpy, scipy, pinocchio, trimesh ...) takes most of a second on
        # a loaded robot PC; frozen objects are skipped (SIGINT and SIGTERM end the node within 0.1 s).
        gc.freeze()


if __name__ == "__main__":
    main()
