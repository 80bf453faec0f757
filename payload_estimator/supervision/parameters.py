"""How :class:`~payload_estimator.settings.Settings` become ROS 2 parameters (ROS-free).

The estimator node declares one parameter per ``Settings`` field. This module
says, for each field, its ROS parameter type, its default and description, and
what a change at run time needs:

* :data:`READ_ONLY`: fixed at start-up (robot, topics, the publish rate):
  ``ros2 param set`` is refused, since changing it would not take effect.
* :data:`LIVE`: read again at its next use (the apply target, the mass limit,
  service names).
* :data:`REBUILD`: the estimation stream is rebuilt with the new value and the
  estimate starts over (frames, estimator, shape, filters ...).

:func:`parameters_refusal` says why the node refuses a change (values that make
no valid settings, or a wrench source the node has no subscription for);
:func:`subscribed_inputs` which topics the node subscribes to, from its values at
start-up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from payload_estimator.pipeline.payload_cloud import CLOUD
from payload_estimator.pipeline.sources.strategies import IMU, JOINTS, WRENCH
from payload_estimator.settings import Settings, WrenchSource

__all__ = [
    "ParameterSpec",
    "parameter_specs",
    "change_effect",
    "changed_fields",
    "settings_with",
    "parameters_refusal",
    "subscribed_inputs",
    "READ_ONLY",
    "LIVE",
    "REBUILD",
    "NO_CHANGE",
    "PARAMETER_TYPES",
]

READ_ONLY = "read_only"
LIVE = "live"
REBUILD = "rebuild"
NO_CHANGE = "none"

PARAMETER_TYPES = ("bool", "integer", "double", "string", "string_array", "double_array")
"""ROS parameter types used (``rcl_interfaces/msg/ParameterType`` without the prefix)."""

_READ_ONLY_FIELDS = frozenset(
    {"robot", "use_builtin_description", "joint_states_topic", "wrench_topic", "imu_topic", "cloud_topic",
     "publish_rate_hz"}
)
_LIVE_FIELDS = frozenset(
    {"apply_target", "max_payload_mass", "franka_set_load_service", "xarm_set_tcp_load_service",
     "ur_set_payload_service", "gravity_compensation_node", "gravity_compensation_prefix"}
)
_TYPES = {
    "bool": "bool",
    "int": "integer",
    "float": "double",
    "str": "string",
    "list[str]": "string_array",
    "list[float]": "double_array",
    "WrenchSource": "string",  # the settings' enums are read and written as their text
    "MotionSource": "string",
}


@dataclass(frozen=True)
class ParameterSpec:
    """One ROS parameter of the estimator node.

    Attributes:
        name: the parameter (= the ``Settings`` field).
        type: one of :data:`PARAMETER_TYPES`.
        default: its default value (a list for the array types).
        description: the field's description, with the choices appended.
        choices: allowed values of a string parameter, or None.
        effect: :data:`READ_ONLY`, :data:`LIVE` or :data:`REBUILD`.
    """

    name: str
    type: str
    default: Any
    description: str
    choices: tuple[str, ...] | None
    effect: str

    @property
    def read_only(self) -> bool:
        """Whether the parameter is fixed at start-up (:data:`READ_ONLY`)."""
        return self.effect == READ_ONLY


def parameter_specs(defaults: Settings | None = None) -> list[ParameterSpec]:
    """One :class:`ParameterSpec` per ``Settings`` field, in declaration order.

    ``defaults``: the values to declare (default: ``Settings()``).
    """
    values = defaults if defaults is not None else Settings()
    specs = []
    for f in fields(Settings):
        type_name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        if type_name not in _TYPES:
            raise TypeError(f"setting {f.name} has a type ({type_name}) with no ROS parameter type")
        choices = f.metadata.get("choices")
        description = f.metadata["description"]
        if choices:
            description += f" (one of: {', '.join(choices)})"
        effect = READ_ONLY if f.name in _READ_ONLY_FIELDS else LIVE if f.name in _LIVE_FIELDS else REBUILD
        if effect == REBUILD:
            description += " [changing it restarts the estimate]"
        default = getattr(values, f.name)
        default = str(default) if isinstance(default, str) else default  # an enum's text
        specs.append(
            ParameterSpec(f.name, _TYPES[type_name], list(default) if isinstance(default, list) else default,
                          description, tuple(choices) if choices else None, effect)
        )
    return specs


def change_effect(old: Settings, new: Settings) -> str:
    """What going from ``old`` to ``new`` needs.

    Returns:
        :data:`READ_ONLY` (a read-only field changed: refuse), else :data:`REBUILD` (a field that
        rebuilds the stream changed), :data:`LIVE` (only live fields changed) or :data:`NO_CHANGE`.
    """
    changed = [f.name for f in fields(Settings) if getattr(old, f.name) != getattr(new, f.name)]
    if not changed:
        return NO_CHANGE
    if any(name in _READ_ONLY_FIELDS for name in changed):
        return READ_ONLY
    if any(name not in _LIVE_FIELDS for name in changed):
        return REBUILD
    return LIVE


def changed_fields(old: Settings, new: Settings) -> list[str]:
    """Names of the fields that differ, in declaration order."""
    return [f.name for f in fields(Settings) if getattr(old, f.name) != getattr(new, f.name)]


def settings_with(current: Settings, updates: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> Settings:
    """``current`` with parameter ``updates`` applied and validated.

    An array parameter given as None (a YAML ``[]`` reaches ROS as "not set") is the empty list;
    any sequence (``array.array`` from rclpy, a tuple) is taken as a list.

    Raises:
        ValueError: values that make no valid settings, the message naming the problem (a
            :class:`~payload_estimator.errors.ConfigurationError` from the settings' checks).
    """
    values = current.to_dict()
    for name, value in dict(updates).items():
        if value is None and isinstance(values.get(name), list):
            value = []
        if not isinstance(value, (str, bytes, list)) and hasattr(value, "__iter__"):
            value = list(value)  # tuples, array.array (rclpy's double arrays), numpy arrays
        values[name] = value
    return Settings.from_dict(values)


def parameters_refusal(values: Mapping[str, Any], wrench_subscribed: bool = True) -> str | None:
    """Why the node refuses these parameter values (the reason names the parameter and the problem), or None.

    Args:
        values: every parameter's value, as they would be after the change.
        wrench_subscribed: whether the node subscribes to a wrench topic. Topics are subscribed once, at
            start-up: a node started with ``wrench_source`` ``joint_torques`` has none, and cannot switch
            to another wrench source.
    """
    try:
        settings = settings_with(Settings(), values)
    except ValueError as exc:
        return str(exc)
    if not wrench_subscribed and settings.wrench_source.reads_wrench_topic:
        return ("the node started with wrench_source joint_torques and has no wrench subscription: "
                "restart it to use another wrench source")
    return None


def subscribed_inputs(values: Mapping[str, Any]) -> dict[str, str]:
    """The input topics the node subscribes to, by stream (``joint_states``, ``wrench``, ``imu``, ``cloud``).

    They follow from its parameter ``values`` at start-up: always the joint
    states; the wrench unless it comes from the joints' efforts (``wrench_source``
    ``joint_torques``); the IMU when ``imu_topic`` names one. Names are as given
    (the node resolves them).
    """
    topics = {JOINTS: values["joint_states_topic"]}
    if WrenchSource(values.get("wrench_source", WrenchSource.FT_SENSOR)).reads_wrench_topic:
        topics[WRENCH] = values["wrench_topic"]
    if values.get("imu_topic"):
        topics[IMU] = values["imu_topic"]
    if values.get("cloud_topic"):
        topics[CLOUD] = values["cloud_topic"]
    return topics
