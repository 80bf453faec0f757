"""Every setting of the estimator, with its default, its meaning and the robot presets.

One dataclass, :class:`Settings`, is the single source of truth: the ROS node
declares one parameter per field (with the field's description), the
per-robot YAML files in ``config/`` are rendered from it
(:func:`render_parameters_yaml`, kept in sync by a test), and ``replay``
reads those same files. :func:`build_stream` turns settings plus a robot
description into the :class:`~payload_estimator.pipeline.stream.EstimationStream`
that the node and ``replay`` both drive.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = [
    "Settings",
    "ROBOT_PRESETS",
    "WRENCH_SOURCES",
    "APPLY_TARGETS",
    "settings_for_robot",
    "render_parameters_yaml",
    "load_parameters_yaml",
    "builtin_description",
    "wrench_convention",
    "stream_config",
    "build_stream",
    "NODE_NAME",
]

NODE_NAME = "payload_estimator"
WRENCH_SOURCES = ("ft_sensor", "franka_base", "franka_stiffness")
APPLY_TARGETS = ("none", "franka", "xarm", "gravity_compensation")
MOTION_SOURCES = ("joints", "imu")


def _p(default: Any, description: str, choices: Sequence[str] | None = None, **kw: Any) -> Any:
    meta = {"description": description, "choices": tuple(choices) if choices else None}
    if isinstance(default, list):
        return field(default_factory=lambda d=default: list(d), metadata=meta, **kw)
    return field(default=default, metadata=meta, **kw)


@dataclass(frozen=True)
class Settings:
    """The estimator's configuration (one ROS parameter per field; SI units, frames named)."""

    # ---------------------------------------------------------------- robot
    robot: str = _p("panda", "robot model: panda, fr3, xarm7 or xarm6", ("panda", "fr3", "xarm7", "xarm6"))
    use_builtin_description: bool = _p(
        False, "use the package's own URDF of `robot` instead of waiting for /robot_description")
    joint_names: list[str] = _p([], "arm joints to use, in any order; empty: the robot's arm joints")
    flange_frame: str = _p("", "frame of the robot's load interface (SetLoad, set_tcp_load); empty: the robot's flange")
    sensor_frame: str = _p("ft_sensor", "frame the estimate is expressed in: the F/T sensor's measurement frame")
    sensor_parent_frame: str = _p(
        "", "if sensor_frame is neither in the URDF nor in tf2, attach it to this frame at sensor_xyz/rpy; "
            "empty: the flange")
    sensor_xyz: list[float] = _p([0.0, 0.0, 0.0], "sensor frame origin in its parent frame, m")
    sensor_rpy: list[float] = _p([0.0, 0.0, 0.0], "sensor frame orientation in its parent frame (roll, pitch, yaw), rad")
    base_rpy: list[float] = _p([0.0, 0.0, 0.0], "orientation of the robot base in the world (tilted or wall mount), rad")
    gravity: float = _p(9.80665, "magnitude of gravity, m/s²")
    # --------------------------------------------------------------- topics
    joint_states_topic: str = _p("/joint_states", "sensor_msgs/JointState input")
    wrench_topic: str = _p("/ft_sensor/wrench", "geometry_msgs/WrenchStamped input")
    imu_topic: str = _p("", "sensor_msgs/Imu input; empty: no IMU")
    # --------------------------------------------------------------- wrench
    wrench_source: str = _p(
        "ft_sensor",
        "ft_sensor: a wrist F/T sensor; franka_base: libfranka O_F_ext_hat_K (base frame, about K); "
        "franka_stiffness: libfranka K_F_ext_hat_K (in K)", WRENCH_SOURCES)
    wrench_frame: str = _p("", "frame the wrench components are expressed in; empty: sensor_frame (ft_sensor), "
                               "the base link (franka_base), stiffness_frame (franka_stiffness)")
    stiffness_frame: str = _p("", "Franka stiffness frame K (franka sources); empty: the flange")
    wrench_sign: float = _p(1.0, "+1 if the sensor reports the load's wrench on it, -1 if it reports the reaction "
                                 "(ft_sensor only; the Franka sources are -1 by definition)")
    sensor_force_range: float = _p(300.0, "F/T force range per axis, N; samples near it are dropped (0: no check)")
    sensor_torque_range: float = _p(30.0, "F/T torque range per axis, N m (0: no check)")
    # ------------------------------------------------------------------ IMU
    imu_frame: str = _p("", "frame of the IMU (URDF or tf2); empty: the IMU message's frame_id")
    motion_source: str = _p("joints", "joints: motion from joint kinematics; imu: angular rate and acceleration "
                                      "from the IMU, gravity from the joints", MOTION_SOURCES)
    # ------------------------------------------------------------- estimator
    estimator: str = _p("pmd", "ols, wls, rls, rtls or pmd", ("ols", "wls", "rls", "rtls", "pmd"))
    estimate_bias: bool = _p(True, "also estimate the six F/T offsets")
    c1: float = _p(3.0, "PMD dynamism scale c1 of paper 004 eq. (9)")
    regularization: float = _p(1.0, "PMD regularisation lambda")
    forgetting: float = _p(0.999, "per-sample forgetting factor of rls/rtls (1: none)")
    payload_shape: str = _p(
        "box:0.1,0.1,0.1@0,0,0.05",
        "payload shape for PMD in the sensor frame: box:SX,SY,SZ@X,Y,Z[,R,P,Y], cylinder:R,H@..., "
        "sphere:R@X,Y,Z, mesh:FILE[*SCALE]@...; join parts with +")
    point_density: float = _p(0.04, "point masses per cm³ filling the shape (paper 004: 0.04)")
    max_points: int = _p(1000, "cap on the number of point masses")
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
    # ---------------------------------------------------------------- apply
    apply_target: str = _p("none", "where ~/apply sends the estimate: none, franka, xarm, gravity_compensation",
                           APPLY_TARGETS)
    max_payload_mass: float = _p(3.0, "the robot's payload limit, kg: ~/apply refuses more")
    franka_set_load_service: str = _p("/service_server/set_load", "franka_msgs/srv/SetLoad service")
    xarm_set_tcp_load_service: str = _p("/xarm/set_tcp_load", "xarm_msgs/srv/SetTcpLoad service")
    gravity_compensation_node: str = _p("", "node whose tool.mass and tool.CoG parameters ~/apply sets")

    def __post_init__(self) -> None:
        for f in fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value not in choices:
                raise ValueError(f"{f.name} must be one of {', '.join(choices)}, got {value!r}")
        for name in ("sensor_xyz", "sensor_rpy", "base_rpy"):
            if len(getattr(self, name)) != 3:
                raise ValueError(f"{name} must have 3 numbers")
        if self.publish_rate_hz <= 0 or self.grid_rate_hz <= 0 or self.estimator_rate_hz <= 0:
            raise ValueError("rates must be positive")
        if self.max_points < 1 or self.point_density <= 0:
            raise ValueError("max_points and point_density must be positive")

    # ----------------------------------------------------------- conversions
    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "Settings":
        """Settings from a parameter dictionary; unknown keys are an error (a typo would be ignored otherwise)."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown setting(s): {', '.join(unknown)}")
        typed = {}
        for key, value in values.items():
            typed[key] = _coerce(key, value, _default(known[key]))
        return cls(**typed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_(self, **changes: Any) -> "Settings":
        return replace(self, **changes)

    @staticmethod
    def describe() -> list[tuple[str, Any, str]]:
        """(name, default, description) of every setting, in declaration order."""
        return [(f.name, _default(f), f.metadata["description"]) for f in fields(Settings)]


def _default(f: Any) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def _coerce(key: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not float(value).is_integer():
            raise ValueError(f"{key} must be an integer, got {value!r}")
        return int(value)
    if isinstance(default, float):
        if isinstance(value, bool):
            raise ValueError(f"{key} must be a number, got {value!r}")
        return float(value)
    if isinstance(default, list):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{key} must be a list, got {value!r}")
        if default and isinstance(default[0], float) or key in ("sensor_xyz", "sensor_rpy", "base_rpy"):
            return [float(v) for v in value]
        return [str(v) for v in value]
    return str(value)


# ------------------------------------------------------------------ presets
_FRANKA = dict(
    wrench_source="franka_stiffness",
    estimate_bias=True,
    max_payload_mass=3.0,
    apply_target="franka",
    joint_states_topic="/franka_robot_state_broadcaster/measured_joint_states",
    wrench_topic="/franka_robot_state_broadcaster/external_wrench_in_stiffness_frame",
    sensor_force_range=0.0,
    sensor_torque_range=0.0,
)
ROBOT_PRESETS: dict[str, dict[str, Any]] = {
    # Franka: no F/T sensor; the robot's own external-wrench estimate in the stiffness frame K,
    # and the estimate expressed at the flange, which is what SetLoad wants.
    "panda": dict(_FRANKA, robot="panda", sensor_frame="panda_link8"),
    "fr3": dict(_FRANKA, robot="fr3", sensor_frame="fr3_link8"),
    # uFactory xArm with its F/T sensor: the raw reading (the "ext" topic has a load model subtracted).
    "xarm7": dict(robot="xarm7", wrench_source="ft_sensor", sensor_frame="ft_sensor", max_payload_mass=3.5,
                  apply_target="xarm", joint_states_topic="/xarm/joint_states",
                  wrench_topic="/xarm/uf_ftsensor_raw_states", sensor_force_range=150.0, sensor_torque_range=4.0),
    "xarm6": dict(robot="xarm6", wrench_source="ft_sensor", sensor_frame="ft_sensor", max_payload_mass=5.0,
                  apply_target="xarm", joint_states_topic="/xarm/joint_states",
                  wrench_topic="/xarm/uf_ftsensor_raw_states", sensor_force_range=150.0, sensor_torque_range=4.0),
}


def settings_for_robot(robot: str, **overrides: Any) -> Settings:
    """The preset of ``robot`` with ``overrides`` applied."""
    if robot not in ROBOT_PRESETS:
        raise ValueError(f"unknown robot {robot!r}; choose one of {', '.join(ROBOT_PRESETS)}")
    return Settings.from_dict({**ROBOT_PRESETS[robot], **overrides})


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


def render_parameters_yaml(robot: str) -> str:
    """The ``config/<robot>.yaml`` file: every parameter, commented, in ROS 2 parameter-file form."""
    s = settings_for_robot(robot)
    lines = [
        f"# payload_estimator parameters for the {robot}.",
        "# Generated by `python -m payload_estimator.settings`; edit freely (values only), and see README.md.",
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

    data = yaml.safe_load(Path(path).read_text()) or {}
    for key in (node_name, f"/{node_name}", "/**"):
        if key in data and isinstance(data[key], dict) and "ros__parameters" in data[key]:
            return Settings.from_dict(data[key]["ros__parameters"])
    raise ValueError(f"{path}: no '{node_name}: ros__parameters:' section")


# ------------------------------------------------------------ stream building
def _flange(settings: Settings) -> str:
    from payload_estimator.robots import get_robot

    return settings.flange_frame or get_robot(settings.robot).flange_frame


def builtin_description(settings: Settings) -> str:
    """The package's URDF of the robot, with the sensor frame at ``sensor_xyz``/``sensor_rpy`` on the flange."""
    from payload_estimator.robots import robot_urdf

    sensor = settings.sensor_frame
    flange = _flange(settings)
    if sensor == flange:
        return robot_urdf(settings.robot)
    return robot_urdf(settings.robot, sensor_xyz_in_flange=tuple(settings.sensor_xyz),
                      sensor_rpy_in_flange=tuple(settings.sensor_rpy), sensor_frame=sensor)


def wrench_convention(settings: Settings, base_frame: str):
    """The :class:`WrenchConvention` of the configured wrench source (``base_frame``: the URDF root)."""
    from payload_estimator.pipeline.wrench import WrenchConvention

    if settings.wrench_source == "ft_sensor":
        return WrenchConvention(settings.wrench_frame or settings.sensor_frame, None, float(np.sign(settings.wrench_sign) or 1.0))
    k = settings.stiffness_frame or _flange(settings)
    if settings.wrench_source == "franka_base":
        return WrenchConvention(settings.wrench_frame or base_frame, k, -1.0)
    return WrenchConvention(settings.wrench_frame or k, None, -1.0)


def stream_config(
    settings: Settings,
    urdf: str,
    extra_frames: Sequence[tuple[str, str, Sequence[float], Sequence[float]]] = (),
    imu_frame: str | None = None,
    zero_phase: bool = False,
):
    """The :class:`StreamConfig` for ``settings`` and a robot description.

    ``extra_frames`` are frames the URDF lacks (from tf2); the sensor frame, if
    still missing, is attached to ``sensor_parent_frame`` (default: the flange)
    at ``sensor_xyz``/``sensor_rpy``.
    """
    from scipy.spatial.transform import Rotation

    from payload_estimator.pipeline.kinematics import _urdf_root_link
    from payload_estimator.pipeline.stream import StreamConfig
    from payload_estimator.pipeline.wrench import SaturationCheck
    from payload_estimator.robots import get_robot

    spec = get_robot(settings.robot)
    frames = [tuple(f) for f in extra_frames]
    names = {f[0] for f in frames}
    if settings.sensor_frame not in names and f'<link name="{settings.sensor_frame}"' not in urdf:
        parent = settings.sensor_parent_frame or _flange(settings)
        frames.append((settings.sensor_frame, parent, tuple(settings.sensor_xyz), tuple(settings.sensor_rpy)))
    saturation = None
    if settings.wrench_source == "ft_sensor" and settings.sensor_force_range > 0 and settings.sensor_torque_range > 0:
        saturation = SaturationCheck(settings.sensor_force_range, settings.sensor_torque_range)
    return StreamConfig(
        urdf=urdf,
        sensor_frame=settings.sensor_frame,
        joint_names=tuple(settings.joint_names) if settings.joint_names else spec.joint_names,
        extra_frames=tuple(frames),
        flange_frame=_flange(settings),
        wrench=wrench_convention(settings, _urdf_root_link(urdf)),
        saturation=saturation,
        imu_frame=(settings.imu_frame or imu_frame) if settings.motion_source == "imu" else None,
        motion_source=settings.motion_source,
        use_joint_velocities=settings.use_joint_velocities,
        R_world_base=Rotation.from_euler("xyz", settings.base_rpy).as_matrix(),
        gravity=settings.gravity,
        rate_hz=settings.grid_rate_hz,
        cutoff_hz=settings.cutoff_hz,
        filter_order=settings.filter_order,
        estimator_rate_hz=settings.estimator_rate_hz,
        max_gap_s=settings.max_gap_s,
        stale_after_s=settings.stale_after_s,
        zero_phase=zero_phase,
    )


def build_stream(
    settings: Settings,
    urdf: str,
    extra_frames: Sequence[tuple[str, str, Sequence[float], Sequence[float]]] = (),
    imu_frame: str | None = None,
    health=None,
    zero_phase: bool = False,
):
    """The :class:`EstimationStream` for ``settings`` (what the node and ``replay`` both run).

    ``zero_phase`` (recordings only) keeps the aligned data and filters them
    forward and backward at :meth:`EstimationStream.finish`.
    """
    from payload_estimator.core.estimators import make_estimator
    from payload_estimator.core.shapes import parse_shape_spec, sample_points
    from payload_estimator.pipeline.stream import EstimationStream

    points = None
    options: dict[str, Any] = {}
    if settings.estimator == "pmd":
        points = sample_points(parse_shape_spec(settings.payload_shape),
                               density=settings.point_density * 1e6, max_points=settings.max_points)
        options = {"c1": settings.c1, "regularization": settings.regularization}
    elif settings.estimator in ("rls", "rtls"):
        options = {"forgetting": settings.forgetting}
    estimator = make_estimator(settings.estimator, points, bias=settings.estimate_bias, **options)
    return EstimationStream(stream_config(settings, urdf, extra_frames, imu_frame, zero_phase), estimator, health)


if __name__ == "__main__":  # regenerate config/*.yaml
    out = Path(__file__).resolve().parent.parent / "config"
    out.mkdir(exist_ok=True)
    for robot in ROBOT_PRESETS:
        (out / f"{robot}.yaml").write_text(render_parameters_yaml(robot))
        print(f"wrote {out / f'{robot}.yaml'}")
