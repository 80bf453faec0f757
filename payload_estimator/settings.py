"""Every setting of the estimator, with its default, its meaning and the robot presets.

One dataclass, :class:`Settings`, is the single source of truth: the ROS node
declares one parameter per field (with the field's description), the
per-robot YAML files in ``config/`` are rendered from it
(:func:`render_parameters_yaml`, kept in sync by a test), and ``replay``
reads those same files. This module holds values and their descriptions only;
:func:`payload_estimator.pipeline.build.build_stream` turns settings plus a
robot description into the stream that the node and ``replay`` both drive.
The choices it offers come from the registries: estimators from
:data:`~payload_estimator.core.estimators.ESTIMATORS`, robots from
:data:`~payload_estimator.robots.ROBOTS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import Any

from payload_estimator.core.cloud_completion import COMPLETIONS, DEFAULT_COMPLETION
from payload_estimator.core.clouds import MAX_CLOUD_DISTANCE_M
from payload_estimator.core.estimators import METHODS
from payload_estimator.core.estimators.pmd import C1_DEFAULT
from payload_estimator.core.point_clouds import CLOUD_MAX_POINTS
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.errors import ConfigurationError
from payload_estimator.robots.spec import ROBOT_NAMES, ROBOTS

__all__ = [
    "Settings",
    "WrenchSource",
    "MotionSource",
    "WRENCH_SOURCES",
    "MOTION_SOURCES",
    "ESTIMATOR_SETTINGS",
    "APPLY_TARGETS",
    "TARGETS_WITHOUT_INERTIA",
    "CONVERGE_ON",
    "EFFORT_UNITS",
    "settings_for_robot",
    "PRESET_VARIANTS",
    "preset_file_name",
    "render_parameters_yaml",
    "load_parameters_yaml",
    "NODE_NAME",
]

NODE_NAME = "payload_estimator"


class _Choice(str, Enum):
    """A setting with a fixed set of values: compared as the enum, read and written as its text."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class WrenchSource(_Choice):
    """Where the payload's wrench comes from (the setting ``wrench_source``).

    Each is carried out by its strategy in :mod:`payload_estimator.pipeline.sources`.
    """

    FT_SENSOR = "ft_sensor"
    """A wrist force/torque sensor's wrench message."""
    FRANKA_BASE = "franka_base"
    """libfranka's external wrench ``O_F_ext_hat_K``: base frame, torque about the stiffness frame K."""
    FRANKA_STIFFNESS = "franka_stiffness"
    """libfranka's external wrench ``K_F_ext_hat_K``: in and about the stiffness frame K."""
    JOINT_TORQUES = "joint_torques"
    """No wrench message: the joint states' efforts less the unloaded arm's own torques."""

    @property
    def reads_wrench_topic(self) -> bool:
        """Whether a wrench message stream is an input (every source but joint torques)."""
        return self is not WrenchSource.JOINT_TORQUES

    @property
    def has_sensor_offsets(self) -> bool:
        """Whether the source has offsets of its own that the estimator may identify.

        An F/T sensor's, or the robot's wrench estimate's; joint torques have none: the arm's
        calibration holds the joints'."""
        return self is not WrenchSource.JOINT_TORQUES


class MotionSource(_Choice):
    """Where the sensor frame's motion comes from (the setting ``motion_source``)."""

    JOINTS = "joints"
    """Angular velocity, acceleration and gravity from joint kinematics (the URDF)."""
    IMU = "imu"
    """Angular rate and accelerations from an IMU on the sensor's body; gravity from the joints."""


WRENCH_SOURCES = tuple(source.value for source in WrenchSource)
MOTION_SOURCES = tuple(source.value for source in MotionSource)
APPLY_TARGETS = ("none", "franka", "xarm", "ur", "gravity_compensation")
TARGETS_WITHOUT_INERTIA = ("xarm", "gravity_compensation")
"""Apply targets that take mass and COM only (``SetTcpLoad``; ``tool.mass``, ``tool.CoG``). UR's ``SetPayload``
takes the inertia too (ur_msgs 2.6 on), so ``ur`` waits for it as ``franka`` does."""
CONVERGE_ON = ("auto", "all", "mass_com")
EFFORT_UNITS = ("torque", "current")
"""What the joint states' efforts are (the setting ``effort_unit``)."""
_ENUMS: dict[str, type[_Choice]] = {"wrench_source": WrenchSource, "motion_source": MotionSource}
"""Settings whose text is read into an enum."""


MAX_COUNT = 2**31 - 1
"""The largest whole-number setting (a count of iterations or points): what the solvers take."""


def _too_large(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_COUNT:
        return f"must be at most {MAX_COUNT}"
    return None


def _positive(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return _too_large(value) if value >= 1 else "must be at least 1"
    return None if value > 0 else "must be positive"


def _nonnegative(value: Any) -> str | None:
    return _too_large(value) if value >= 0 else "must be zero or positive"


MAX_TOOL_LENGTH_M = 10.0
"""The longest ``identify_tool_length``, m: no arm reaches that far."""


def _tool_length(value: Any) -> str | None:
    return None if 0.0 <= value <= MAX_TOOL_LENGTH_M else f"must be within 0 to {MAX_TOOL_LENGTH_M:g} m"


MAX_REGULARIZATION = 1e6
"""The largest PMD regularisation: beyond it the shape's prior alone decides, and the solver's sums overflow."""


def _regularization(value: Any) -> str | None:
    return _nonnegative(value) or (None if value <= MAX_REGULARIZATION else f"must be at most {MAX_REGULARIZATION:g}")


MIN_OFFSET_WINDOW_S = 0.1
"""The shortest window of the wrench source's offsets, s (0: one offset for the whole run)."""


def _offset_window(value: Any) -> str | None:
    if value == 0 or value >= MIN_OFFSET_WINDOW_S:
        return None
    return f"must be 0 (one offset) or at least {MIN_OFFSET_WINDOW_S:g} s"


def _forgetting(value: Any) -> str | None:
    return None if value == 0.0 or 0.0 < value <= 1.0 else "must be in (0, 1], or 0 for the estimator's own"


def _torque_constants(value: Any) -> str | None:
    if not all(math.isfinite(v) and v != 0.0 for v in value):
        return "must be finite non-zero numbers, one per joint (N m/A for currents)"
    return None


def _noise_pair(value: Any) -> str | None:
    if len(value) != 2 or not all(math.isfinite(v) and v >= 0 for v in value) or (0.0 in value and any(value)):
        return "must be two positive numbers [N, N m], or both 0 (measured)"
    return None


def _p(default: Any, description: str, choices: Sequence[str] | None = None, *,
       check: Callable[[Any], str | None] | None = None, unset: Any = None, **kw: Any) -> Any:
    """Declare a settings field: its default, its description, and optionally its choices, check and unset value.

    ``check`` of a value returns None, or what is wrong with it; ``unset`` is the value that means
    the estimator's own default."""
    meta = {"description": description, "choices": tuple(choices) if choices else None, "check": check,
            "unset": unset}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta, **kw)
    return field(default=default, metadata=meta, **kw)


@dataclass(frozen=True)
class Settings:
    """The estimator's configuration (one ROS parameter per field; SI units, frames named)."""

    # ---------------------------------------------------------------- robot
    robot: str = _p("panda", "built-in robot preset; empty: any arm, from robot_description alone (then name "
                             "flange_frame)", ("",) + ROBOT_NAMES)
    use_builtin_description: bool = _p(
        False, "use the package's own URDF of `robot` instead of waiting for /robot_description")
    joint_names: list[str] = _p([], "arm joints to use, in any order; empty: the preset's arm joints, or the "
                                    "movable joints from the root link to flange_frame")
    flange_frame: str = _p("", "frame of the robot's load interface (SetLoad, set_tcp_load); empty: the preset's "
                               "flange (required when robot is empty)")
    sensor_frame: str = _p("ft_sensor", "frame the estimate is expressed in: the F/T sensor's measurement frame")
    sensor_parent_frame: str = _p(
        "", "if sensor_frame is neither in the URDF nor in tf2, attach it to this frame at sensor_xyz/rpy; "
            "empty: the flange")
    sensor_xyz: list[float] = _p([0.0, 0.0, 0.0], "sensor frame origin in its parent frame, m")
    sensor_rpy: list[float] = _p([0.0, 0.0, 0.0],
                                 "sensor frame orientation in its parent frame (roll, pitch, yaw), rad")
    base_rpy: list[float] = _p([0.0, 0.0, 0.0],
                               "orientation of the robot base in the world (tilted or wall mount), rad")
    gravity: float = _p(STANDARD_GRAVITY, "magnitude of gravity, m/s²")
    # --------------------------------------------------------------- topics
    joint_states_topic: str = _p("/joint_states", "sensor_msgs/JointState input")
    wrench_topic: str = _p("/ft_sensor/wrench", "geometry_msgs/WrenchStamped input")
    imu_topic: str = _p("", "sensor_msgs/Imu input; empty: no IMU")
    cloud_topic: str = _p("", "sensor_msgs/PointCloud2 input: a camera's segmented cloud of the held payload, made "
                              "PMD's shape at its stamp (frames from the URDF or tf); empty: no cloud")
    # --------------------------------------------------------------- wrench
    wrench_source: WrenchSource = _p(
        WrenchSource.FT_SENSOR,
        "ft_sensor: a wrist F/T sensor; franka_base: libfranka O_F_ext_hat_K (base frame, about K); "
        "franka_stiffness: libfranka K_F_ext_hat_K (in K); joint_torques: no wrench input, the joint states' "
        "efforts less the unloaded arm's torques (arm_calibration)", WRENCH_SOURCES)
    arm_calibration: str = _p("", "joint_torques: the unloaded arm's calibration file (payload-estimator calibrate, "
                                  "~/calibrate); empty: the description's inertias and no friction (rough)")
    effort_unit: str = _p("torque", "joint_torques: what the joint states' efforts are: torque (N m at the joint) "
                                    "or current (A, times torque_constants)", EFFORT_UNITS)
    torque_constants: list[float] = _p(
        [], "joint_torques: per joint, the effort's factor to N m at the joint: N m/A with the gear ratio for "
            "currents, a correction for torques (-1 flips a joint's sign); empty: 1 for torques, the calibration's "
            "effort scale (calibrate --effort-scale) for currents", check=_torque_constants)
    wrench_frame: str = _p("", "frame the wrench components are expressed in; empty: sensor_frame (ft_sensor), "
                               "the base link (franka_base), stiffness_frame (franka_stiffness)")
    stiffness_frame: str = _p("", "Franka stiffness frame K (franka sources); empty: the flange")
    wrench_sign: float = _p(1.0, "+1 if the sensor reports the load's wrench on it, -1 if it reports the reaction "
                                 "(ft_sensor only; the Franka sources are -1 by definition)")
    sensor_force_range: float = _p(300.0, "F/T force range per axis, N; samples near it are dropped (0: no check)")
    sensor_torque_range: float = _p(30.0, "F/T torque range per axis, N m (0: no check)")
    # ------------------------------------------------------------------ IMU
    imu_frame: str = _p("", "frame of the IMU (URDF or tf2); empty: the IMU message's frame_id")
    motion_source: MotionSource = _p(MotionSource.JOINTS, "joints: motion from joint kinematics; imu: angular rate and "
                                                 "acceleration from the IMU, gravity from the joints", MOTION_SOURCES)
    # ------------------------------------------------------------- estimator
    estimator: str = _p("pmd", "estimator: " + ", ".join(METHODS), METHODS)
    estimate_bias: bool = _p(True, "also estimate the six F/T offsets (never with joint_torques: the calibration "
                                   "holds the joints' offsets)")
    c1: float = _p(C1_DEFAULT, "PMD: how lively (accelerating, turning) a sample must be to count with the full "
                               "dynamic model rather than gravity alone: c1 of Nadeau et al.'s eq. (9), weight "
                               "tanh(3 dynamism / c1), > 0",
                   check=_positive)
    regularization: float = _p(1.0, "PMD regularisation lambda, >= 0", check=_regularization)
    solve_time_budget_s: float = _p(
        0.01, "PMD on a live robot (the node): wall time the solver may spend on one estimate, s; reached, the "
              "estimate keeps the last one that converged and the next continues the solve (0: no budget); "
              "recordings (replay, demo) use the iteration budget only, so their estimates do not depend on the "
              "machine's load",
        check=_nonnegative)
    solve_iteration_budget: int = _p(
        300, "PMD: solver iterations one estimate may spend (0: no budget); reached, as the time "
             "budget",
        check=_nonnegative)
    forgetting: float = _p(0.0, "per-sample forgetting factor of rls/rtls, in (0, 1] (1: none); 0: the "
                                "estimator's own (rls 0.999, rtls 1)", check=_forgetting, unset=0.0)
    offset_window_s: float = _p(
        10.0, "the wrench source's offsets (an F/T sensor's drift, the joint-torque path's slow torques) are a line of "
              "their own in every window of this many seconds of sample time, left out of the fit; 0: one constant "
              "offset for the whole run", check=_offset_window)
    track_payload: bool = _p(True, "follow the payload: hold out contacts, detect payload changes and restart the "
                                   "estimate, keeping the F/T offsets (core/tracking.py); false: a plain estimator "
                                   "that takes every sample")
    ft_noise_std: list[float] = _p([0.0, 0.0], "F/T noise std from the sensor's data sheet, [force N, torque N m], "
                                               "for rtls's noise model; zeros: measured from the signal",
                                   check=_noise_pair, unset=[0.0, 0.0])
    payload_shape: str = _p(
        "box:0.1,0.1,0.1@0,0,0.05",
        "payload shape for PMD in the sensor frame: box:SX,SY,SZ@X,Y,Z[,R,P,Y], cylinder:R,H@..., "
        "sphere:R@X,Y,Z, mesh:FILE[*SCALE]@... (mesh:FILE#K one body of several), meshparts:FILE[*SCALE]@... "
        "(each body a part); join parts with +; or points:FILE, a point cloud: a .ply or .pcd file (fields x, y, z, "
        "a part label part/label/segment, volume) or rows x,y,z[,part[,volume]] (CSV, .npy), m (estimate --points)")
    point_density: float = _p(0.04, "point masses per cm³ filling the shape (Nadeau et al.: 0.04)", check=_positive)
    max_points: int = _p(1000, "cap on the number of point masses", check=_positive)
    cloud_max_distance: float = _p(
        MAX_CLOUD_DISTANCE_M, "a point cloud of the payload (points:FILE, a camera's) is refused when a point lies "
                              "farther than this from the sensor origin, m: a cloud of the table or the scene, or "
                              "one in mm", check=_positive)
    cloud_max_points: int = _p(CLOUD_MAX_POINTS, "budget of point masses a point cloud is merged down to, voxel by "
                                                 "voxel and part by part (a camera's cloud of the payload mid-run, "
                                                 "or a points:FILE shape with more points)", check=_positive)
    cloud_completion: str = _p(
        DEFAULT_COMPLETION, "how a camera's point cloud of the payload, which sees one side, becomes point masses "
        "that fill it (core/cloud_completion.py): none (the visible points), hull (of each part's points), extrude "
        "(each view ray to the far side), mirror (about the plane through the cloud's principal axis), "
        "mirror_gripper (about the gripper's xz and yz planes: the best on every view of benchmarks/partial_views.py)",
        COMPLETIONS)
    # ------------------------------------------------------------- pipeline
    grid_rate_hz: float = _p(1000.0, "rate of the common time grid the inputs are aligned to, Hz")
    cutoff_hz: float = _p(10.0, "cutoff of the low-pass applied to every signal, Hz")
    filter_order: int = _p(4, "Butterworth order of that low-pass")
    estimator_rate_hz: float = _p(100.0, "rate at which filtered samples enter the estimator, Hz")
    use_joint_velocities: bool = _p(False, "filter the driver's joint velocities instead of differentiating positions")
    max_gap_s: float = _p(0.05, "largest input gap interpolated across, s")
    stale_after_s: float = _p(0.5, "an input silent this long is reported stale, s")
    # --------------------------------------------------------------- output
    publish_rate_hz: float = _p(10.0, "rate of ~/estimate, ~/inertia and ~/markers, Hz")
    # ---------------------------------------------------------- convergence
    converge_on: str = _p(
        "auto", "what must be identified, certain and steady before the estimate counts as converged (and "
        "~/apply sends it): all (mass, COM and inertia), mass_com, or auto (mass_com for the xarm and "
        "gravity_compensation targets, which take no inertia; all otherwise)", CONVERGE_ON)
    max_mass_rel_std: float = _p(0.02, "converged needs the mass's standard deviation below this fraction of it")
    max_com_std: float = _p(0.005, "converged needs each COM component's standard deviation below this, m")
    max_inertia_rel_std: float = _p(0.25, "converged (with the inertia) needs each inertia entry's standard "
                                          "deviation below this fraction of the mean principal moment")
    # ---------------------------------------------------------------- apply
    apply_target: str = _p("none", "where ~/apply sends the estimate: none, franka, xarm, ur, gravity_compensation",
                           APPLY_TARGETS)
    max_payload_mass: float = _p(3.0, "the robot's payload limit, kg: ~/apply refuses more")
    # The drivers' names: franka_ros2's node "service_server" serves "~/set_load"
    # (franka_hardware/src/franka_param_service_server.cpp); xarm_ros2's "ufactory_driver" serves
    # "set_tcp_load" on its sub-node hw_ns, "xarm" for the xArm 5/6/7, "ufactory" for the Lite 6 and 850
    # (xarm_api/src/xarm_driver.cpp, xarm_api/launch/xarm7_driver.launch.py); both in the launch's namespace.
    franka_set_load_service: str = _p("/service_server/set_load", "franka_msgs/srv/SetLoad service")
    xarm_set_tcp_load_service: str = _p("/xarm/set_tcp_load", "xarm_msgs/srv/SetTcpLoad service (enable "
                                                               "services.set_tcp_load in xarm_user_params.yaml)")
    # ur_robot_driver's io_and_status_controller (ur_controllers GPIOController) serves "~/set_payload".
    ur_set_payload_service: str = _p("/io_and_status_controller/set_payload", "ur_msgs/srv/SetPayload service")
    gravity_compensation_node: str = _p("", "node whose tool.mass and tool.CoG parameters ~/apply sets: the filter's "
                                            "own node, or the controller whose filter chain holds it, e.g. "
                                            "/force_torque_sensor_broadcaster")
    # control_toolbox's GravityCompensation declares tool.mass and tool.CoG under the prefix it is configured
    # with (control_toolbox/src/control_filters/gravity_compensation_filter_parameters.yaml); a filters::FilterChain
    # configures filter N with "<chain>.filterN.params." (ros/filters include/filters/filter_chain.hpp).
    gravity_compensation_prefix: str = _p("", "prefix of the filter's tool.mass and tool.CoG on "
                                              "gravity_compensation_node: empty for a filter on its own, "
                                              "sensor_filter_chain.filterN.params. in force_torque_sensor_broadcaster")
    # -------------------------------------------------- identification (~/identify)
    # excitation.MotionLimits takes its defaults from the identify_* fields below.
    trajectory_action: str = _p(
        "", "control_msgs/FollowJointTrajectory action of the arm's joint trajectory controller, which ~/identify "
            "sends its motion to; empty: ~/identify is refused")
    identify_duration: float = _p(5.0, "length of the identification motion, s (a goal's duration overrides it)")
    identify_max_tcp_speed: float = _p(0.25, "top linear speed of the flange and of the payload's farthest points "
                                             "during the identification motion, m/s (ISO/TS 15066 cobot practice; "
                                             "a goal's max_tcp_speed overrides it)")
    identify_tool_length: float = _p(
        0.15, "how far the tool and payload reach beyond the flange along its z axis, m: the identification motion "
              "holds identify_max_tcp_speed at that point too (0: at the flange alone); used while payload_shape is "
              "at its default, else the corners of payload_shape (or its point cloud's outermost points) count",
        check=_tool_length)
    identify_max_excursion: float = _p(1.2, "largest excursion of each joint from the start of the motion, rad")
    identify_floor_height: float = _p(0.05, "the payload stays above this height above the robot's base, m "
                                            "(the table the robot stands on is at 0)")
    identify_base_clearance: float = _p(0.1, "the payload stays this far from the base's z axis, m")
    identify_payload_radius: float = _p(0.1, "radius of a sphere about the flange that holds the payload, m "
                                              "(kept clear of the floor and the base)")
    identify_max_tracking_error: float = _p(
        0.1, "~/identify stops the robot when a joint lags its reference by more than this, rad")
    identify_point_spacing: float = _p(0.02, "time between two points of the trajectory sent to the controller, s")
    identify_return_to_start: bool = _p(
        True, "once converged, stop the motion and go back to its start (false: stop where it is)")

    def __post_init__(self) -> None:
        for f in fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value not in choices:
                raise ConfigurationError(f"{f.name} must be one of {', '.join(choices)}, got {value!r}")
            problem = f.metadata["check"](value) if f.metadata.get("check") else None
            if problem:
                raise ConfigurationError(f"{f.name} {problem}, got {value!r}")
            if f.name in _ENUMS:
                object.__setattr__(self, f.name, _ENUMS[f.name](value))
        for name in ("sensor_xyz", "sensor_rpy", "base_rpy"):
            if len(getattr(self, name)) != 3:
                raise ConfigurationError(f"{name} must have 3 numbers")
        if self.publish_rate_hz <= 0 or self.grid_rate_hz <= 0 or self.estimator_rate_hz <= 0:
            raise ConfigurationError("rates must be positive")
        if not (self.max_mass_rel_std > 0 and self.max_com_std > 0 and self.max_inertia_rel_std > 0):
            raise ConfigurationError("max_mass_rel_std, max_com_std and max_inertia_rel_std must be positive")
        if not (self.identify_duration > 0 and self.identify_max_tcp_speed > 0 and self.identify_max_excursion > 0
                and self.identify_max_tracking_error > 0 and self.identify_point_spacing > 0):
            raise ConfigurationError("identify_duration, identify_max_tcp_speed, identify_max_excursion, "
                             "identify_max_tracking_error and identify_point_spacing must be positive")
        if not (self.identify_base_clearance >= 0 and self.identify_payload_radius >= 0
                and math.isfinite(self.identify_floor_height)):
            raise ConfigurationError("identify_base_clearance and identify_payload_radius must be >= 0, "
                             "identify_floor_height finite")
        if not self.robot and self.use_builtin_description:
            raise ConfigurationError("use_builtin_description needs a built-in robot preset")

    @property
    def estimates_offsets(self) -> bool:
        """Whether the estimator identifies the wrench source's offsets.

        ``estimate_bias``, for a source that has them."""
        return self.estimate_bias and WrenchSource(self.wrench_source).has_sensor_offsets

    def estimator_options(self) -> dict[str, Any]:
        """Return every setting an estimator may read (:data:`ESTIMATOR_SETTINGS`).

        None where it is unset (the estimator's own default then applies)."""
        known = {f.name: f for f in fields(self)}
        options = {}
        for name in ESTIMATOR_SETTINGS:
            value = getattr(self, name)
            options[name] = None if value == known[name].metadata.get("unset") else value
        return options

    @property
    def converge_on_inertia(self) -> bool:
        """Whether the inertia is handed over, so must converge too (``converge_on``)."""
        if self.converge_on == "auto":
            return self.apply_target not in TARGETS_WITHOUT_INERTIA
        return self.converge_on == "all"

    # ----------------------------------------------------------- conversions
    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Settings:
        """Settings from a parameter dictionary; unknown keys are an error (a typo would be ignored otherwise)."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigurationError(f"unknown setting(s): {', '.join(unknown)}")
        typed = {}
        for key, value in values.items():
            typed[key] = _coerce(key, value, _default(known[key]))
        return cls(**typed)

    def to_dict(self) -> dict[str, Any]:
        """Every field by name, as plain values (an enum's text), ready for YAML, JSON or ROS parameters."""
        return {k: (str(v) if isinstance(v, _Choice) else v) for k, v in asdict(self).items()}

    def with_(self, **changes: Any) -> Settings:
        """Return a copy with ``changes`` (fields by name) applied, checked again."""
        return replace(self, **changes)

    @staticmethod
    def describe() -> list[tuple[str, Any, str]]:
        """(name, default, description) of every setting, in declaration order."""
        return [(f.name, _default(f), f.metadata["description"]) for f in fields(Settings)]


def _default(f: Any) -> Any:
    value = f.default_factory() if f.default_factory is not MISSING else f.default
    return str(value) if isinstance(value, _Choice) else value


def _estimator_settings() -> tuple[str, ...]:
    from payload_estimator.core.estimators import ESTIMATORS

    read = {name for cls in ESTIMATORS.values() for name in cls.settings_options.values()}
    return tuple(f.name for f in fields(Settings) if f.name in read)


ESTIMATOR_SETTINGS: tuple[str, ...] = _estimator_settings()
"""The settings some estimator reads, as its class declares (``settings_options``), in declaration order:
the command line offers each as an option of the commands that estimate."""


def _coerce(key: str, value: Any, default: Any) -> Any:
    try:
        return _coerced(key, value, default)
    except ConfigurationError:
        raise
    except (TypeError, ValueError):  # float("abc"), float([1]): the parameter named, its value shown
        what = "numbers" if isinstance(default, list) else "a number"
        raise ConfigurationError(f"{key} must be {what}, got {value!r}") from None


def _coerced(key: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigurationError(f"{key} must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not float(value).is_integer():
            raise ConfigurationError(f"{key} must be an integer, got {value!r}")
        return int(value)
    if isinstance(default, float):
        if isinstance(value, bool):
            raise ConfigurationError(f"{key} must be a number, got {value!r}")
        return float(value)
    if isinstance(default, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigurationError(f"{key} must be a list, got {value!r}")
        if default and isinstance(default[0], float) or key in ("sensor_xyz", "sensor_rpy", "base_rpy",
                                                                         "torque_constants"):
            return [float(v) for v in value]
        return [str(v) for v in value]
    return str(value)


# ------------------------------------------------------------------ presets
PRESET_VARIANTS = ("", "joint_torques")
"""Variants of every robot's preset: as the robot is usually equipped, and without a wrist sensor
(the wrench from joint torques; ``config/<robot>_joint_torques.yaml``)."""


def _variant_parameters(robot: str, variant: str) -> dict[str, Any]:
    if variant == "":
        return {}
    if variant != "joint_torques":
        raise ConfigurationError(
            f"unknown preset variant {variant!r}; choose one of {', '.join(PRESET_VARIANTS[1:])}")
    spec = ROBOTS[robot]
    # Efforts on the robot's joint-torque topic (Franka's link-side tau_J, the xArm's current-based estimate).
    # The estimate is expressed at the flange (what SetLoad and set_tcp_load take); no F/T offsets and no range check.
    return {"wrench_source": "joint_torques", "sensor_frame": spec.flange_frame,
            "joint_states_topic": spec.topics.joint_torque_states,
            "estimate_bias": False, "sensor_force_range": 0.0, "sensor_torque_range": 0.0,
            "arm_calibration": f"~/.ros/payload_estimator/{robot}_arm_calibration.yaml"}


def preset_file_name(robot: str, variant: str = "") -> str:
    """``config/`` file name of a robot's preset variant (:data:`PRESET_VARIANTS`)."""
    return f"{robot}_{variant}.yaml" if variant else f"{robot}.yaml"


def settings_for_robot(robot: str, variant: str = "", **overrides: Any) -> Settings:
    """Return the preset of ``robot`` (:data:`~payload_estimator.robots.ROBOTS`) with ``overrides`` applied.

    In one of its :data:`PRESET_VARIANTS`; ``robot=""`` gives the defaults for an arm known only
    from its description."""
    if robot == "":
        return Settings.from_dict({"robot": "", **overrides})
    if robot not in ROBOTS:
        raise ConfigurationError(f"unknown robot {robot!r}; choose one of {', '.join(ROBOT_NAMES)}")
    return Settings.from_dict({**ROBOTS[robot].parameters, **_variant_parameters(robot, variant), **overrides})


def _yaml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '""' if v == "" else (f'"{v}"' if any(c in v for c in ":#@,[]{}") or v.strip() != v else v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_yaml_value(x) for x in v) + "]"
    return str(v)


def render_parameters_yaml(robot: str, variant: str = "") -> str:
    """The ``config/<robot>[_<variant>].yaml`` file: every parameter, commented, in ROS 2 parameter-file form."""
    s = settings_for_robot(robot, variant)
    what = f"the {robot}" + (" without a wrist sensor: the wrench from joint torques" if variant else "")
    lines = [
        f"# payload_estimator parameters for {what}.",
        "# Generated by `python -m payload_estimator.settings`; edit freely (values only), and see docs/node.md.",
        f"{NODE_NAME}:",
        "  ros__parameters:",
    ]
    for name, _, description in Settings.describe():
        lines.append(f"    # {description}")
        lines.append(f"    {name}: {_yaml_value(getattr(s, name))}")
    return "\n".join(lines) + "\n"


def load_parameters_yaml(path: str | Path, node_name: str = NODE_NAME) -> Settings:
    """Settings from a ROS 2 parameter file (``<node>: ros__parameters: {...}``, or ``/**``)."""
    import yaml

    from payload_estimator.files import read_text_file

    data = yaml.safe_load(read_text_file(path, "a ROS 2 parameter file (YAML)")) or {}
    if not isinstance(data, dict):
        data = {}
    for key in (node_name, f"/{node_name}", "/**"):
        if key in data and isinstance(data[key], dict) and "ros__parameters" in data[key]:
            return Settings.from_dict(data[key]["ros__parameters"])
    raise ConfigurationError(f"{path}: no '{node_name}: ros__parameters:' section")


if __name__ == "__main__":  # regenerate (or --check) config/<robot>.yaml of a checkout, or --out DIR
    import sys

    from payload_estimator.robots.generate import checkout_root, write_or_check

    _root = checkout_root()
    sys.exit(write_or_check(
        {preset_file_name(robot, v): render_parameters_yaml(robot, v)
         for robot in ROBOT_NAMES for v in PRESET_VARIANTS},
        None if _root is None else _root / "config",
        prog="python -m payload_estimator.settings",
        what="the per-robot parameter files config/<robot>.yaml",
    ))
