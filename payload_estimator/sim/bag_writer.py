"""Simulated runs written as rosbag2 recordings without ROS, through ``rosbags``.

Written bags are what ROS 2 Jazzy's ``ros2 bag play`` expects: rosbag2
metadata version 9 (:data:`BAG_VERSION`), CDR messages with their type
definitions and hashes, record times in ns since the epoch, and per-topic
offered QoS profiles (``/robot_description`` transient local, so playback
republishes it latched). :mod:`payload_estimator.io.bag` reads them back, as
it reads a real robot's recordings.

A simulated bag (:func:`write_simulated_bag`) holds, with the topic names of
the robot's configuration (:class:`~payload_estimator.settings.Settings`):

* joint states (``sensor_msgs/JointState``: arm joints, position rad, velocity
  rad/s, effort N·m);
* the wrench (``geometry_msgs/WrenchStamped``) *as the configured source reports
  it* (:func:`source_wrench`, the inverse of the stream's conversion): a wrist
  F/T sensor in its frame with its sign, or libfranka's external-wrench
  estimate (reaction sign) in the stiffness frame or in the base frame;
* the IMU (``sensor_msgs/Imu``, on the configured topic or
  :data:`DEFAULT_IMU_TOPIC`) when the run has one;
* ``/robot_description`` (``std_msgs/String``, the URDF simulated);
* ``/payload_estimator/ground_truth`` (``geometry_msgs/InertiaStamped``, in the
  run's sensor frame: once at the start, and for a work cycle again at each change of the held
  payload, stamped with its time; all zero for an empty gripper);
* the run's description in the metadata's ``custom_data`` (keys prefixed with
  :data:`~payload_estimator.io.bag.CUSTOM_DATA_PREFIX`; ``effort_model`` when the efforts come
  from a :class:`~payload_estimator.sim.efforts.EffortModel`).

Header stamps are ``epoch + t`` exactly (integer ns); each topic is recorded a
fixed fraction of a millisecond after its stamp (:data:`RECORD_LATENCY_S`),
as a live recorder would see it, which also makes the record order of
messages with equal stamps unambiguous.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.errors import ConfigurationError
from payload_estimator.io.bag import (
    CUSTOM_DATA_PREFIX,
    GROUND_TRUTH_TOPIC,
    INERTIA_STAMPED_TYPE,
    INPUT_TYPES,
    ROBOT_DESCRIPTION_TOPIC,
    STORAGES,
    STRING_TYPE,
)
from payload_estimator.io.ros_factories import rosbags_factory
from payload_estimator.io.ros_outbound import (
    imu_msg,
    inertia_stamped_msg,
    joint_state_msg,
    string_msg,
    wrench_stamped_msg,
)
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH

if TYPE_CHECKING:
    from payload_estimator.pipeline.wrench import WrenchConvention
    from payload_estimator.settings import Settings
    from payload_estimator.sim.run import SimulatedRun

__all__ = [
    "BAG_VERSION",
    "DEFAULT_IMU_TOPIC",
    "RECORD_LATENCY_S",
    "write_simulated_bag",
    "source_wrench",
    "SourceWrench",
]

BAG_VERSION: Final = 9  # Final: its type is Literal[9], as rosbags' Writer(version=...) requires
"""rosbag2 metadata version written (ROS 2 Jazzy's)."""
DEFAULT_IMU_TOPIC = "/imu/data"
"""IMU topic of simulated bags when the settings name none."""
RECORD_LATENCY_S = {JOINTS: 0.0002, WRENCH: 0.0003, IMU: 0.0004}
"""Record time minus header stamp of each input in simulated bags, s."""

# ------------------------------------------------------------------------ QoS


def _qos(durability: str, depth: int):
    """An offered QoS profile as ``ros2 bag record`` stores it (Jazzy: infinite durations as 2^63 - 1 ns)."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    infinite = QosTime(9223372036, 854775807)
    return Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE, QosDurability[durability],
               infinite, infinite, QosLiveliness.AUTOMATIC, infinite, False)


# --------------------------------------------------------------------- writing


class SourceWrench:
    """Turns wrenches in ``S`` (our convention) into what the configured source reports.

    The exact inverse of :func:`~payload_estimator.pipeline.wrench.wrench_to_sensor` with the
    convention the stream uses (:func:`~payload_estimator.pipeline.build.stream_config`)::

        f   = sign * R_sensor_expressed^T f_S
        tau = sign * R_sensor_expressed^T (tau_S - p_sensor_refpoint x f_S)

    Args:
        settings: the robot's configuration (wrench source, frames, sign).
        urdf: the robot model. sensor_frame: ``S``. joint_names: column order of ``q``.

    Attributes:
        convention: the stream's :class:`~payload_estimator.pipeline.wrench.WrenchConvention`.
        needs_joints: whether the conversion depends on the joint positions.
    """

    def __init__(self, settings: Settings, urdf: str, sensor_frame: str, joint_names: tuple[str, ...]) -> None:
        from payload_estimator.pipeline.build import stream_config, wrench_convention
        from payload_estimator.pipeline.kinematics import SensorKinematics
        from payload_estimator.pipeline.wrench import WrenchConvention
        from payload_estimator.robots import parse_description

        config = stream_config(settings, urdf)
        conv = wrench_convention(settings, parse_description(urdf).root_link)
        if conv is None:  # the source reads no wrench (joint torques): the bag has the F/T sensor's own reading
            conv = WrenchConvention(sensor_frame, None, 1.0)
        self.convention: WrenchConvention = conv
        self.sensor_frame = sensor_frame
        self.needs_joints = not (conv.expressed_in == sensor_frame and conv.reference_frame == sensor_frame)
        self._kin = (SensorKinematics(urdf, sensor_frame, joint_names, extra_frames=config.extra_frames)
                     if self.needs_joints else None)

    def __call__(self, wrench_in_sensor: np.ndarray, q: np.ndarray | None) -> np.ndarray:
        """Return (M, 6) [f N, tau N·m] as the source reports ``wrench_in_sensor`` (M, 6).

        With the joints at ``q`` (M, n) rad (ignored, and may be None, when :attr:`needs_joints`
        is False)."""
        conv = self.convention
        w_S = np.asarray(wrench_in_sensor, dtype=float)
        if self._kin is None:
            return conv.sign * w_S
        if q is None:
            raise ValueError("this wrench source needs the joint positions")
        R_sensor_expressed, _ = self._kin.frame_pose(q, conv.expressed_in, self.sensor_frame)
        _, p_sensor_ref = self._kin.frame_pose(q, conv.reference_frame, self.sensor_frame)
        f_S, tau_S = w_S[:, :3], w_S[:, 3:]
        force = conv.sign * np.einsum("nji,nj->ni", R_sensor_expressed, f_S)
        torque = conv.sign * np.einsum("nji,nj->ni", R_sensor_expressed, tau_S - np.cross(p_sensor_ref, f_S))
        return np.hstack([force, torque])


def source_wrench(run: SimulatedRun, settings: Settings) -> tuple[np.ndarray, WrenchConvention]:
    """The run's wrench as the configured source reports it: ((M, 6) [f N, tau N·m], its convention).

    :class:`SourceWrench` at the run's measured joint positions interpolated to the wrench stamps.
    """
    convert = SourceWrench(settings, run.urdf, run.sensor_frame, run.joint_names)
    q = None
    if convert.needs_joints:
        q = np.column_stack([np.interp(run.wrench_t, run.joint_t, run.joint_q[:, j]) for j in range(run.n_joints)])
    return convert(run.wrench_in_sensor, q), convert.convention


def _stamps_ns(t: np.ndarray, epoch_ns: int) -> np.ndarray:
    return epoch_ns + np.round(np.asarray(t, dtype=float) * 1e9).astype(np.int64)


def _fields(ns: int) -> dict[str, int]:
    sec, nanosec = divmod(int(ns), 1_000_000_000)
    return {"sec": sec, "nanosec": nanosec}


def _custom_data(run: SimulatedRun) -> dict[str, str]:
    data = {"robot": run.robot, "payload": run.payload_name, "trajectory": run.trajectory, "noise": run.noise,
            "seed": str(run.seed)}
    if run.effort_model:  # a joint-torque sensor model (sim.efforts): what the efforts are
        data["effort_model"] = run.effort_model
        # the truth of calibrate --effort-scale: the factor each joint's reported effort is multiplied by
        if np.size(run.effort_scale) and not np.allclose(run.effort_scale, 1.0):
            data["effort_scale"] = " ".join(f"{1.0 / v:.9g}" for v in np.asarray(run.effort_scale, dtype=float))
        # the truth of calibrate --load-friction: each joint's load-dependent Coulomb coefficient
        if np.any(np.asarray(run.effort_load_friction, dtype=float) > 0.0):
            data["load_friction"] = " ".join(f"{v:.9g}" for v in np.asarray(run.effort_load_friction, dtype=float))
    from payload_estimator.core.shapes import format_shape_spec
    from payload_estimator.sim.payloads import get_payload

    try:
        spec = format_shape_spec(get_payload(run.payload_name).envelope)
    except ValueError:  # a custom payload (no envelope known) or a mesh without a file
        spec = None
    if spec:
        data["payload_shape"] = spec
    return {CUSTOM_DATA_PREFIX + k: v for k, v in data.items()}


def write_simulated_bag(
    run: SimulatedRun,
    path: str | Path,
    storage: str = "mcap",
    settings: Settings | None = None,
    epoch: float = 1.7e9,
) -> Path:
    """Write ``run`` as a rosbag2 directory at ``path`` (module docstring); returns ``path``.

    Args:
        run: the simulated run.
        path: the bag directory to create.
        storage: ``"mcap"`` or ``"sqlite3"``.
        settings: topic names and wrench source; default: the preset of ``run.robot`` (a built-in
            robot; give them for any other arm).
        epoch: stamp of the run's ``t = 0``, s since the Unix epoch.

    Raises:
        FileExistsError: ``path`` exists (rosbag2 never overwrites).
        ConfigurationError: unknown storage.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    from payload_estimator.io.interfaces import ros_typestore
    from payload_estimator.settings import settings_for_robot

    if storage not in STORAGES:
        raise ConfigurationError(f"storage must be one of {', '.join(STORAGES)}, got {storage!r}")
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; rosbag2 does not overwrite")
    settings = settings if settings is not None else settings_for_robot(run.robot)
    typestore = ros_typestore(ours=False)
    records, topics = _bag_content(run, settings, rosbags_factory(typestore), int(round(epoch * 1e9)))
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=BAG_VERSION, storage_plugin=plugin) as writer:
        for key, value in _custom_data(run).items():
            writer.set_custom_data(key, value)
        connections = {
            topic: writer.add_connection(topic, msgtype, typestore=typestore, serialization_format="cdr",
                                         offered_qos_profiles=[qos])
            for topic, (msgtype, qos) in topics.items()
        }
        for ns, topic, msg in records:
            conn = connections[topic]
            writer.write(conn, ns, typestore.serialize_cdr(msg, conn.msgtype))
    return path


def _bag_content(
    run: SimulatedRun, settings: Settings, make: Any, epoch_ns: int
) -> tuple[list[tuple[int, str, Any]], dict[str, tuple[str, Any]]]:
    """(records ``(record time ns, topic, message)`` in record order, topic -> (type, offered QoS))."""
    wrench, conv = source_wrench(run, settings)
    has_imu = len(run.imu_t) > 0 and bool(run.imu_frame)
    records: list[tuple[int, str, Any]] = []
    t0 = int(_stamps_ns(np.array([min(run.joint_t[0], run.wrench_t[0])]), epoch_ns)[0])
    records.append((t0, ROBOT_DESCRIPTION_TOPIC, string_msg(make, run.urdf)))
    records.append((t0, GROUND_TRUTH_TOPIC,
                    inertia_stamped_msg(make, run.payload_params, run.sensor_frame, _fields(t0))))
    for t_change, phi in zip(run.truth_change_t, run.truth_phis):  # a work cycle: the truth from each change on
        ns = int(_stamps_ns(np.array([t_change]), epoch_ns)[0])
        records.append((ns, GROUND_TRUTH_TOPIC,
                        inertia_stamped_msg(make, InertialParameters(phi), run.sensor_frame, _fields(ns))))

    def add(kind: str, topic: str, t: np.ndarray, build) -> None:
        stamps = _stamps_ns(t, epoch_ns)
        latency = int(round(RECORD_LATENCY_S[kind] * 1e9))
        for k, ns in enumerate(stamps):
            records.append((int(ns) + latency, topic, build(k, _fields(ns))))

    names = list(run.joint_names)
    add(JOINTS, settings.joint_states_topic, run.joint_t,
        lambda k, s: joint_state_msg(make, s, names, run.joint_q[k], run.joint_dq[k], run.joint_effort[k]))
    add(WRENCH, settings.wrench_topic, run.wrench_t,
        lambda k, s: wrench_stamped_msg(make, s, conv.expressed_in, wrench[k, :3], wrench[k, 3:]))
    imu_topic = settings.imu_topic or DEFAULT_IMU_TOPIC
    if has_imu:
        add(IMU, imu_topic, run.imu_t,
            lambda k, s: imu_msg(make, s, str(run.imu_frame), run.imu_gyro_in_imu[k],
                                 run.imu_specific_force_in_imu[k]))
    records.sort(key=lambda r: r[0])  # stable: equal times keep their topic order

    topics = {ROBOT_DESCRIPTION_TOPIC: (STRING_TYPE, _qos("TRANSIENT_LOCAL", 1)),
              GROUND_TRUTH_TOPIC: (INERTIA_STAMPED_TYPE, _qos("TRANSIENT_LOCAL", 1 + len(run.truth_change_t))),
              settings.joint_states_topic: (INPUT_TYPES[JOINTS], _qos("VOLATILE", 10)),
              settings.wrench_topic: (INPUT_TYPES[WRENCH], _qos("VOLATILE", 10))}
    if has_imu:
        topics[imu_topic] = (INPUT_TYPES[IMU], _qos("VOLATILE", 10))
    return records, topics
