"""A simulated robot arm holding a known payload, published as the real robot's drivers do.

At start-up the node simulates ``duration`` seconds of the ``robot`` carrying
``payload`` along ``trajectory`` (MuJoCo, :func:`~payload_estimator.sim.mujoco_sim.simulate`),
then publishes it in real time, looping (or holding the last sample). A looping run's motion ends
where it began (the excitation, then back to its start: :func:`~payload_estimator.sim.live.looping_trajectory`),
so its replay goes on without a jump or a gap in the stamps, as a robot repeating a motion would:

* joint states on the robot's ``joint_states_topic`` (sensor_msgs/JointState, rad, rad/s, N m); with
  ``efforts`` the efforts are a realistic joint-torque sensor's (Franka's tau_J, the xArm's motor
  currents: :meth:`~payload_estimator.sim.efforts.EffortModel.for_robot`), its friction acting on the
  joints, and ``arm_mismatch_seed`` makes the simulated arm unlike its URDF (the estimator still gets
  the URDF): what the joint-torque wrench source (``wrench_source: joint_torques``) and its
  calibration (``~/calibrate`` of the estimator, with ``payload:=none``) meet on a real arm;
* the wrench on its ``wrench_topic``, in the convention of its configuration:
  the F/T sensor's reading for the xArm, Franka's external wrench in the
  stiffness frame (sign -1) for the Panda and FR3 (geometry_msgs/WrenchStamped);
* optionally an IMU (``~/imu``, sensor_msgs/Imu, frame ``imu_link``);
* optionally (``camera``) a depth camera's cloud of the held payload (sensor_msgs/PointCloud2, 1 Hz, on
  ``/camera/payload/points``), the camera on a tripod, its frame on ``/tf_static``
  (:mod:`~payload_estimator.sim.camera_feed`);
* ``robot_description`` (std_msgs/String, transient local) and tf: ``/tf_static``
  for the fixed joints, ``/tf`` for the others at ``tf_rate_hz`` (pinocchio
  forward kinematics of the published joint states);
* the truth, ``~/truth`` (geometry_msgs/InertiaStamped, latched, in the sensor frame);
* with ``publish_clock``, ``/clock`` (the stamps are then simulated time from 1 s;
  run the other nodes with ``use_sim_time``). Otherwise stamps are wall-clock time.

With ``scenario:=identify`` nothing is simulated beforehand: the arm
(:class:`~payload_estimator.sim.live_arm.LiveArm`) holds still at the robot's home pose holding
the payload, integrated in real time, until ``control_msgs/action/FollowJointTrajectory`` goals on
``/<controller>/follow_joint_trajectory`` move it (the ``controller`` parameter; by default the
controller the robot's driver starts, the preset's ``trajectory_action``). The server behaves
like ros2_controllers' joint_trajectory_controller
(:mod:`payload_estimator.sim.trajectory_controller`): a goal with the wrong joints, no point, a
first point away from the arm or a stamp in the past is aborted at once with its error code and
the reason in ``error_string`` (JTC rejects them without a reason); feedback (desired, actual,
error) at ``action_monitor_rate_hz``; a new goal preempts the running one (aborted, "preempted");
a cancelled goal brakes to rest within the acceleration limits and then reports canceled.

Topic names and the wrench convention come from the robot's preset
(:data:`~payload_estimator.robots.ROBOTS`), so that the estimator,
started with ``config/<robot>.yaml``, reads the simulation exactly as it
would read the robot.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import rclpy
from geometry_msgs.msg import InertiaStamped, TransformStamped, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String
from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.errors import ConfigurationError
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.robots import ROBOT_NAMES
from payload_estimator.ros.shutdown import NodeProcess, spin_until_shutdown
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.live import IMU, JOINTS, WRENCH, LiveRun, looping_trajectory
from payload_estimator.sim.live_arm import LiveArm
from payload_estimator.sim.tf_tree import LinkTransform, UrdfTransforms
from payload_estimator.sim.trajectory_controller import (
    INVALID_GOAL,
    RUNNING,
    SUCCEEDED,
    SUCCESSFUL,
    GoalError,
    Progress,
    TrajectoryController,
    TrajectoryGoal,
)

__all__ = ["SimNode", "main"]

NODE_NAME = "payload_sim"
PUBLISH_PERIOD_S = 0.004
"""Samples due are published every 4 ms (a 1 kHz stream goes out 4 messages at a time)."""
EXECUTOR_SHUTDOWN_S = 1.0
"""Shutting down: how long to wait for the executor's callbacks (a goal braking) to end, s."""
SIM_TIME_ORIGIN_S = 1.0
"""Simulated time of the first sample when publishing /clock (0 would read as "no stamp")."""

# Sensor streams as Franka's convenience topics publish them: best effort, keep last.
SENSOR_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                        reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

_PARAMETERS: tuple[tuple[str, Any, str], ...] = (
    ("robot", "panda", f"robot model: {', '.join(ROBOT_NAMES[:-1])} or {ROBOT_NAMES[-1]}"),
    ("payload", "claw_hammer", "payload of the catalogue (payload_estimator.sim.payloads), or none: the unloaded arm "
                               "(e.g. for the estimator's ~/calibrate)"),
    ("scenario", "single", "single: the payload held throughout; cycle: picks and places of four payloads with "
                           "contacts (sim.arm_cycle.arm_work_cycle; payload, trajectory and duration do not apply); "
                           "identify: the arm holds still at home until FollowJointTrajectory goals move it "
                           "(trajectory, duration and loop do not apply)"),
    ("trajectory", "wrist", "excitation: wrist (Nadeau et al.'s wrist sinusoids), thesis (Lambert's "
                               "all-joint sinusoids) or pickplace"),
    ("duration", 20.0, "length of the excitation, s; with loop, the way back to its start follows (a second or "
                       "two) before the run loops, else the run holds"),
    ("noise", "moderate", "F/T noise level of Nadeau et al.'s Table II: none, low, moderate, high"),
    ("efforts", False, "report realistic joint efforts: the robot's joint-torque sensor (Franka tau_J, xArm motor "
                       "currents) with its friction acting on the joints and its noise (sim.efforts.EffortModel."
                       "for_robot); false: the applied torque with small noise, no friction"),
    ("arm_mismatch_seed", -1, "simulate an arm unlike its URDF (link masses +-15 %, COMs +-1 cm) drawn from this "
                              "seed: the same seed, the same arm (a calibration run and an estimation run); "
                              "-1: the arm is its URDF"),
    ("seed", 0, "seed of every random draw"),
    ("loop", True, "replay the run again and again (else hold the last sample)"),
    ("rate_hz", 1000.0, "joint state (and IMU) rate, Hz"),
    ("wrench_rate_hz", 0.0, "wrench rate, Hz (0: rate_hz)"),
    ("imu", False, "also simulate and publish an IMU on ~/imu (frame imu_link)"),
    ("camera", False, "also publish a depth camera's cloud of the held payload (sim.camera_feed: MuJoCo ray casting, "
                      "Kinect-like noise) at 1 Hz on /camera/payload/points in payload_camera_optical_frame, its pose "
                      "on /tf_static: a camera on a tripod 0.45 m in front of, 0.25 m beside and 0.25 m above the "
                      "gripper's first pose (base frame), looking at it; scenarios single and identify"),
    ("joint_states_topic", "", "where to publish joint states; empty: the robot's preset"),
    ("wrench_topic", "", "where to publish the wrench; empty: the robot's preset"),
    ("wrench_source", "", "wrench convention (ft_sensor, franka_base, franka_stiffness); empty: the preset"),
    ("publish_clock", False, "publish /clock (simulated time) and stamp with it"),
    ("tf_rate_hz", 50.0, "rate of /tf for the moving joints, Hz"),
    ("controller", "", "scenario identify: the FollowJointTrajectory server is /<controller>/follow_joint_trajectory; "
                       "empty: the robot's preset (trajectory_action, the controller its driver starts)"),
    ("action_monitor_rate_hz", 20.0, "scenario identify: feedback and goal checks per second, Hz"),
    ("goal_tolerance", 0.01, "scenario identify: default goal tolerance per joint, rad"),
    ("goal_time_tolerance", 0.5, "scenario identify: default time after the end to reach the goal tolerance, s"),
)
SCENARIOS = ("single", "cycle", "identify")


class SimNode(Node):
    """Publishes a simulated run in real time, or drives a live arm (see the module docstring).

    Keyword arguments go to :class:`rclpy.node.Node`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        for name, default, description in _PARAMETERS:
            self.declare_parameter(name, default, ParameterDescriptor(description=description, read_only=True))
        p = {name: self.get_parameter(name).value for name, _, _ in _PARAMETERS}
        if p["scenario"] not in SCENARIOS:
            raise ConfigurationError(f"scenario must be one of {', '.join(SCENARIOS)}, got {p['scenario']!r}")

        overrides = {k: p[k] for k in ("joint_states_topic", "wrench_topic", "wrench_source") if p[k]}
        settings = settings_for_robot(p["robot"], **overrides)
        self._arm_options = _arm_options(p)
        self.live: LiveRun | None = None
        self.arm: LiveArm | None = None
        self._lock = threading.Lock()  # the live arm: stepped by the timer, steered by the action server
        t0 = time.perf_counter()
        truth = self._start_arm(p, settings) if p["scenario"] == "identify" else self._start_run(p, settings)
        self._log_ready(p, settings, truth, time.perf_counter() - t0)
        self._create_publishers(p, settings)
        self._publish_once(truth)
        if p["camera"]:
            self._start_camera(p)

        # ---- real-time publishing on the steady clock (never on /clock, which this node drives)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        publishing = MutuallyExclusiveCallbackGroup()
        self.create_timer(PUBLISH_PERIOD_S, self._publish_due, clock=steady, callback_group=publishing)
        self.create_timer(1.0 / float(p["tf_rate_hz"]), self._publish_tf, clock=steady, callback_group=publishing)
        if self.arm is not None:
            action = (f"/{p['controller'].strip('/')}/follow_joint_trajectory" if p["controller"]
                      else settings.trajectory_action)
            self._server = _FollowJointTrajectoryServer(self, action, float(p["action_monitor_rate_hz"]),
                                                        float(p["goal_tolerance"]), float(p["goal_time_tolerance"]))
            self.get_logger().info(f"FollowJointTrajectory goals on {action}")

    def _start_arm(self, p: dict[str, Any], settings: Any) -> InertialParameters:
        """Scenario identify: the live arm at home, holding the payload; returns what it holds."""
        rate_hz, wrench_rate_hz = _rates(p)
        self.arm = LiveArm(robot=p["robot"], payload=p["payload"], settings=settings, noise=p["noise"],
                           seed=int(p["seed"]), rate_hz=rate_hz, wrench_rate_hz=wrench_rate_hz, imu=bool(p["imu"]),
                           **self._arm_options)
        self.joint_names: tuple[str, ...] = tuple(self.arm.joint_names)
        self.urdf, self.sensor_frame, self.imu_frame = self.arm.urdf, self.arm.sensor_frame, self.arm.imu_frame
        self.wrench_frame_id = self.arm.wrench_frame_id
        self.get_logger().info(f"the {p['robot']} holds the {p['payload']} at its home pose ({p['noise']} "
                               f"noise, seed {p['seed']}), waiting for trajectory goals")
        return self.arm.truth

    def _start_run(self, p: dict[str, Any], settings: Any) -> InertialParameters:
        """Scenarios single and cycle: the run simulated now, to be replayed; returns what is held first."""
        self.get_logger().info(f"simulating {p['duration']:.0f} s of the {p['robot']} holding the {p['payload']} "
                               f"({p['trajectory']}, {p['noise']} noise, seed {p['seed']}) ...")
        run = self._simulate(p, *_rates(p))
        self.live = LiveRun(run, settings, loop=bool(p["loop"]))
        self.run = run
        self.joint_names = tuple(run.joint_names)
        self.urdf, self.sensor_frame, self.imu_frame = run.urdf, run.sensor_frame, run.imu_frame
        self.wrench_frame_id = self.live.wrench_frame_id
        self._held_phi = run.payload_phi
        return run.payload_params

    def _log_ready(self, p: dict[str, Any], settings: Any, truth: InertialParameters, seconds: float) -> None:
        self.get_logger().info(
            f"ready in {seconds:.1f} s; "
            + (f"payload mass {truth.mass:.4f} kg, COM {np.round(truth.com, 4).tolist()} m in {self.sensor_frame}"
               if truth.mass > 0.0 else "no payload (the unloaded arm)")
            + f"; publishing joint states on "
            f"{settings.joint_states_topic}"
            + (f" (efforts: {self._arm_options['efforts'].name})" if "efforts" in self._arm_options else "")
            + (" from an arm unlike its URDF" if "arm_mismatch" in self._arm_options else "")
            + f", the {settings.wrench_source} wrench on {settings.wrench_topic} "
            f"(frame {self.wrench_frame_id})"
            + ("" if self.live is None else ", then holding" if not p["loop"]
               else f", looping every {self.live.period:.1f} s" + (" (seamless)" if self.live.loop_gap_s == 0.0 else
                                                                    f" ({self.live.loop_gap_s:g} s apart)")))

    def _create_publishers(self, p: dict[str, Any], settings: Any) -> None:
        self._joint_pub = self.create_publisher(JointState, settings.joint_states_topic, SENSOR_QOS)
        self._wrench_pub = self.create_publisher(WrenchStamped, settings.wrench_topic, SENSOR_QOS)
        self._imu_pub = self.create_publisher(Imu, "~/imu", SENSOR_QOS) if self.imu_frame else None
        self._clock_pub = self.create_publisher(ClockMsg, "/clock", 10) if p["publish_clock"] else None
        self._description_pub = self.create_publisher(String, "robot_description", LATCHED_QOS)
        self._truth_pub = self.create_publisher(InertiaStamped, "~/truth", LATCHED_QOS)
        self._tf = TransformBroadcaster(self)
        self._tree = UrdfTransforms(self.urdf)

    def _publish_once(self, truth: InertialParameters) -> None:
        """What is published once: the description, the truth (latched), the fixed joints' tf."""
        self._origin = SIM_TIME_ORIGIN_S if self._clock_pub else self.get_clock().now().nanoseconds * 1e-9
        self._start = time.monotonic()
        factory = ros_factories.rclpy_factory()
        self._description_pub.publish(String(data=self.urdf))
        self._truth_pub.publish(ros_outbound.inertia_stamped_msg(factory, truth, self.sensor_frame, self._origin))
        self._static_tf = StaticTransformBroadcaster(self)
        self._static_tf.sendTransform([self._transform(t, self._origin) for t in self._tree.fixed()])
        self._last_joint: tuple[float, np.ndarray] | None = None

    def _start_camera(self, p: dict[str, Any]) -> None:
        """The tripod camera (``camera``): its clouds at about 1 Hz on a timer of their own."""
        from sensor_msgs.msg import PointCloud2

        from payload_estimator.sim.camera_feed import CAMERA_PERIOD_S, CAMERA_TOPIC, PayloadCamera
        from payload_estimator.sim.payloads import get_payload

        if p["scenario"] == "cycle" or p["payload"] == "none":
            self.get_logger().warning(f"camera: not with scenario {p['scenario']} and payload {p['payload']} (it "
                                      "shows one held payload): no cloud is published")
            return
        camera = PayloadCamera(self.urdf, self.sensor_frame, self.joint_names, get_payload(p["payload"]).envelope,
                               seed=int(p["seed"]))
        publisher = self.create_publisher(PointCloud2, CAMERA_TOPIC, 2)
        self.create_timer(CAMERA_PERIOD_S, lambda: self._publish_cloud(camera, publisher),
                          clock=Clock(clock_type=ClockType.STEADY_TIME),
                          callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"camera: the {p['payload']}'s visible cloud on {CAMERA_TOPIC} every "
                               f"{CAMERA_PERIOD_S:g} s (sim.camera_feed)")

    def _publish_cloud(self, camera: Any, publisher: Any) -> None:
        """What the camera sees at the last joint state published, stamped with it (placed on its first call)."""
        from payload_estimator.sim.camera_feed import CAMERA_FRAME

        last = self._last_joint
        if last is None:
            return
        t, q = last
        if camera.T_base_camera is None:  # placed at the first pose; /tf_static again, with the camera
            camera.place(q)
            self._static_tf.sendTransform([self._transform(x, self._origin)
                                           for x in [*self._tree.fixed(), camera.link_transform()]])
        view = camera.capture(q)
        if len(view.points_in_camera):
            publisher.publish(ros_outbound.point_cloud2_msg(
                ros_factories.rclpy_factory(), self._origin + t, CAMERA_FRAME, view.points_in_camera,
                part=view.part.astype(np.int32)))

    def _simulate(self, p: dict[str, Any], rate_hz: float, wrench_rate_hz: float | None) -> Any:
        from payload_estimator.sim.mujoco_sim import simulate

        if p["scenario"] == "cycle":
            from payload_estimator.sim.arm_cycle import arm_work_cycle

            return arm_work_cycle(p["robot"], seed=int(p["seed"])).simulate(
                noise=p["noise"], seed=int(p["seed"]), imu=bool(p["imu"]), rate_hz=rate_hz,
                wrench_rate_hz=wrench_rate_hz, progress=self._still_running, **self._arm_options)
        trajectory, duration = p["trajectory"], float(p["duration"])
        if p["loop"]:  # the motion, then back to its start: the replay loops without a jump (sim.live)
            trajectory = looping_trajectory(p["robot"], trajectory, duration, seed=int(p["seed"]))
            duration = trajectory.duration
        return simulate(robot=p["robot"], payload=p["payload"], trajectory=trajectory,
                        duration=duration, noise=p["noise"], seed=int(p["seed"]),
                        imu=bool(p["imu"]), rate_hz=rate_hz, wrench_rate_hz=wrench_rate_hz,
                        progress=self._still_running, **self._arm_options)

    def _still_running(self, fraction: float) -> None:
        """While it simulates: a signal (which shut the context down) ends the node now, not seconds later."""
        if not self.context.ok():
            raise KeyboardInterrupt

    # ----------------------------------------------------------------- stamps
    def run_time(self) -> float:
        """Time since the start (the live arm's time, the replay's run time), s."""
        return time.monotonic() - self._start

    def to_run_time(self, stamp: Any) -> float:
        """Run time of a header stamp (builtin_interfaces/Time), s."""
        return stamp.sec + stamp.nanosec * 1e-9 - self._origin

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
        t_now = self.run_time()
        if self._clock_pub is not None:
            clock = ClockMsg()
            clock.clock = self._stamp(t_now)
            self._clock_pub.publish(clock)
        if self.arm is not None:
            with self._lock:
                s = self.arm.advance(t_now)
            self._publish_samples(s.joint_t, s.joint_q, s.joint_dq, s.joint_effort, s.wrench_t, s.wrench,
                                  s.imu_t, s.imu_gyro_in_imu, s.imu_specific_force_in_imu)
            return
        assert self.live is not None
        due = self.live.due(t_now)
        run, live = self.run, self.live
        joints, wrench = due[JOINTS], due[WRENCH]
        imu = due.get(IMU)
        imu_index = imu.index if imu is not None else np.zeros(0, dtype=int)
        self._publish_samples(
            joints.t, run.joint_q[joints.index], run.joint_dq[joints.index], run.joint_effort[joints.index],
            wrench.t, np.hstack([live.wrench_force[wrench.index], live.wrench_torque[wrench.index]]),
            imu.t if imu is not None else np.zeros(0), run.imu_gyro_in_imu[imu_index],
            run.imu_specific_force_in_imu[imu_index])
        if len(joints):
            self._publish_truth_if_changed(int(joints.index[-1]), float(joints.t[-1]))

    def _publish_samples(self, joint_t: np.ndarray, q: np.ndarray, dq: np.ndarray, effort: np.ndarray,
                         wrench_t: np.ndarray, wrench: np.ndarray, imu_t: np.ndarray, gyro: np.ndarray,
                         specific_force: np.ndarray) -> None:
        """Publish joint states, wrenches and IMU samples at run times ``*_t``, s.

        Joint states are in rad, rad/s and N m, wrenches (M, 6) [N, N m] as the
        source reports them, IMU samples in rad/s and m/s².
        """
        names = list(self.joint_names)
        for k, t in enumerate(joint_t):
            msg = JointState()
            msg.header.stamp = self._stamp(t)
            msg.name = names
            msg.position = q[k].tolist()
            msg.velocity = dq[k].tolist()
            msg.effort = effort[k].tolist()
            self._joint_pub.publish(msg)
        if len(joint_t):
            self._last_joint = (float(joint_t[-1]), q[-1])
        for k, t in enumerate(wrench_t):
            msg = WrenchStamped()
            msg.header.stamp = self._stamp(t)
            msg.header.frame_id = self.wrench_frame_id
            f, tau = wrench[k, :3], wrench[k, 3:]
            msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = float(f[0]), float(f[1]), float(f[2])
            msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (
                float(tau[0]), float(tau[1]), float(tau[2]))
            self._wrench_pub.publish(msg)
        if self._imu_pub is not None:
            for k, t in enumerate(imu_t):
                msg = Imu()
                msg.header.stamp = self._stamp(t)
                msg.header.frame_id = self.imu_frame or ""
                msg.orientation_covariance[0] = -1.0  # no orientation
                w, a = gyro[k], specific_force[k]
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
                                for x in self._tree.moving(self.joint_names, q)])


def _rates(p: dict[str, Any]) -> tuple[float, float | None]:
    """(joint-state rate, wrench rate or None for the same), Hz."""
    return float(p["rate_hz"]), float(p["wrench_rate_hz"]) or None


def _arm_options(p: dict[str, Any]) -> dict[str, Any]:
    """The simulator's ``efforts`` and ``arm_mismatch`` arguments from the node's parameters."""
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel

    options: dict[str, Any] = {}
    if p["efforts"]:
        options["efforts"] = EffortModel.for_robot(p["robot"])
    if int(p["arm_mismatch_seed"]) >= 0:
        options["arm_mismatch"] = ArmMismatch(seed=int(p["arm_mismatch_seed"]))
    return options


class _FollowJointTrajectoryServer:
    """The ``FollowJointTrajectory`` action of the live arm: messages in and out.

    The logic is in :class:`~payload_estimator.sim.trajectory_controller.TrajectoryController`.
    """

    def __init__(self, node: SimNode, name: str, monitor_rate_hz: float, goal_tolerance: float,
                 goal_time_tolerance: float) -> None:
        from control_msgs.action import FollowJointTrajectory
        from rclpy.action import ActionServer, CancelResponse, GoalResponse

        assert node.arm is not None
        self.node = node
        self.action_type = FollowJointTrajectory
        self.period = 1.0 / monitor_rate_hz
        self.controller = TrajectoryController(node.arm, goal_tolerance=goal_tolerance,
                                               goal_time_tolerance=goal_time_tolerance)
        self._active: Any = None  # the goal handle whose trajectory the arm follows
        self._errors: dict[bytes, GoalError] = {}
        self._server = ActionServer(
            node, FollowJointTrajectory, name,
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            handle_accepted_callback=self._accepted,
            cancel_callback=lambda _handle: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )

    @staticmethod
    def _key(handle: Any) -> bytes:
        return bytes(handle.goal_id.uuid)

    def _goal(self, msg: Any) -> TrajectoryGoal:
        """The goal message's fields (``control_msgs/action/FollowJointTrajectory`` Goal) as arrays."""
        points = msg.trajectory.points
        K = len(points)

        def column(name: str) -> np.ndarray | None:
            rows = [list(getattr(p, name)) for p in points]
            if not K or all(len(r) == 0 for r in rows):
                return None if K else np.zeros((0, len(msg.trajectory.joint_names)))
            if any(len(r) != len(rows[0]) for r in rows):
                raise GoalError(INVALID_GOAL, f"the points do not all have the same number of {name}")
            return np.array(rows, dtype=float)

        stamp = msg.trajectory.header.stamp
        return TrajectoryGoal(
            joint_names=tuple(msg.trajectory.joint_names),
            time_from_start=np.array([p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in points]),
            positions=column("positions"),  # type: ignore[arg-type]
            velocities=column("velocities") if K else None,
            accelerations=column("accelerations") if K else None,
            start_time=None if stamp.sec == 0 and stamp.nanosec == 0 else self.node.to_run_time(stamp),
            path_tolerance={t.name: t.position for t in msg.path_tolerance},
            goal_tolerance={t.name: t.position for t in msg.goal_tolerance},
            goal_time_tolerance=msg.goal_time_tolerance.sec + msg.goal_time_tolerance.nanosec * 1e-9,
        )

    def _accepted(self, handle: Any) -> None:
        """Start the goal now (preempting the running one), or remember why it is refused."""
        node = self.node
        try:
            goal = self._goal(handle.request)
            with node._lock:
                t_now = node.arm.t if node.arm is not None else 0.0
                self.controller.start(goal, t_now)
                previous, self._active = self._active, handle
            if previous is not None:
                node.get_logger().info("a new trajectory goal preempts the running one")
        except GoalError as exc:
            self._errors[self._key(handle)] = exc
            node.get_logger().warn(f"trajectory goal refused: {exc}")
        handle.execute()

    def _result(self, code: int, message: str) -> Any:
        result = self.action_type.Result()
        result.error_code = code
        result.error_string = message
        return result

    def _execute(self, handle: Any) -> Any:
        node = self.node
        error = self._errors.pop(self._key(handle), None)
        if error is not None:
            handle.abort()
            return self._result(error.code, str(error))
        assert node.arm is not None
        feedback = self.action_type.Feedback()
        feedback.joint_names = list(node.joint_names)
        while True:
            time.sleep(self.period)
            if not node.context.ok():  # shutting down: the arm no longer moves
                return self._result(SUCCESSFUL, "the simulator is shutting down")
            if handle.is_cancel_requested:
                return self._cancel(handle)
            with node._lock:
                preempted = self._active is not handle
                progress = None if preempted else self.controller.progress(node.arm.t)
            if progress is None:
                handle.abort()
                return self._result(SUCCESSFUL, "preempted by a new goal")
            if progress.status == RUNNING:
                self._fill(feedback, progress)
                handle.publish_feedback(feedback)
                continue
            with node._lock:
                if self._active is handle:
                    self._active = None
            if progress.status == SUCCEEDED:
                handle.succeed()
            else:
                node.get_logger().warn(f"trajectory goal aborted: {progress.message}")
                handle.abort()
            return self._result(progress.code, progress.message)

    def _cancel(self, handle: Any) -> Any:
        """Brake to rest, then report the goal canceled."""
        node = self.node
        assert node.arm is not None
        with node._lock:
            at_rest = 0.0
            if self._active is handle:  # else a newer goal runs: nothing to stop
                at_rest = self.controller.cancel()
                self._active = None
        while node.arm.t < at_rest and rclpy.ok(context=node.context):
            time.sleep(self.period)
        handle.canceled()
        return self._result(SUCCESSFUL, "cancelled: the arm braked to rest")

    def _fill(self, feedback: Any, progress: Progress) -> None:
        s = progress.state
        feedback.header.stamp = self.node._stamp(s.t)
        feedback.desired.positions = s.q_ref.tolist()
        feedback.desired.velocities = s.dq_ref.tolist()
        feedback.desired.accelerations = s.ddq_ref.tolist()
        feedback.actual.positions = s.q.tolist()
        feedback.actual.velocities = s.dq.tolist()
        feedback.error.positions = (s.q_ref - s.q).tolist()
        feedback.error.velocities = (s.dq_ref - s.dq).tolist()
        for point in (feedback.desired, feedback.actual, feedback.error):
            point.time_from_start.sec, point.time_from_start.nanosec = 0, 0


def main(args: list[str] | None = None) -> None:
    """``ros2 run payload_estimator sim_node``.

    One SIGINT or SIGTERM, whenever it comes (while it simulates too), ends it with status 0
    (:mod:`payload_estimator.ros.shutdown`).
    """
    with NodeProcess() as process:
        rclpy.init(args=args)
        node = SimNode()
        process.on_exit(node.destroy_node)
        # with an arm, the action server's goals wait in threads of their own
        executor: Any = SingleThreadedExecutor() if node.arm is None else MultiThreadedExecutor(num_threads=4)
        process.on_exit(lambda: executor.shutdown(timeout_sec=EXECUTOR_SHUTDOWN_S))
        executor.add_node(node)
        spin_until_shutdown(executor, node.context)


if __name__ == "__main__":
    main()
