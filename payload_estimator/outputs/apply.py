"""The request ``~/apply`` sends for the configured target, checked and rendered as YAML (ROS-free).

Targets (``apply_target``):

* ``franka``: ``franka_msgs/srv/SetLoad`` on ``franka_set_load_service``:
  ``mass`` (kg), ``center_of_mass`` (flange to load COM, m, flange frame),
  ``load_inertia`` (3x3 about the COM, flange axes, column-major, kg m²).
* ``xarm``: ``xarm_msgs/srv/SetTcpLoad`` on ``xarm_set_tcp_load_service``:
  ``weight`` (kg), ``center_of_gravity`` ([x, y, z] mm, flange frame).
* ``ur``: ``ur_msgs/srv/SetPayload`` on ``ur_set_payload_service``:
  ``mass`` (kg), ``center_of_gravity`` (``{x, y, z}`` m, tool flange frame ``tool0``).
* ``gravity_compensation``: ``rcl_interfaces/srv/SetParameters`` on
  ``<gravity_compensation_node>/set_parameters`` with ``tool.mass`` (kg) and
  ``tool.CoG`` ([x, y, z] m, in the sensor frame, which must be the filter's
  ``sensor_frame``), each behind ``gravity_compensation_prefix`` (the filter's
  place in a filter chain, e.g. ``sensor_filter_chain.filter1.params.``).

The request is a plain dictionary of message fields (what
``rosidl_runtime_py.set_message_fields`` and ``ros2 service call`` take); the
ROS shell only fills the message and calls the service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from payload_estimator.outputs.handover import check_handover
from payload_estimator.outputs.robot_load import (
    franka_set_load_fields,
    gravity_compensation_parameters,
    ur_set_payload_fields,
    xarm_set_tcp_load_fields,
)
from payload_estimator.settings import TARGETS_WITHOUT_INERTIA

__all__ = ["ApplyRequest", "build_apply_request", "SERVICE_TYPES", "PARAMETER_DOUBLE", "PARAMETER_DOUBLE_ARRAY"]

SERVICE_TYPES = {
    "franka": "franka_msgs/srv/SetLoad",
    "xarm": "xarm_msgs/srv/SetTcpLoad",
    "ur": "ur_msgs/srv/SetPayload",
    "gravity_compensation": "rcl_interfaces/srv/SetParameters",
}
PARAMETER_DOUBLE = 3
"""``rcl_interfaces/msg/ParameterType.PARAMETER_DOUBLE``."""
PARAMETER_DOUBLE_ARRAY = 8
"""``rcl_interfaces/msg/ParameterType.PARAMETER_DOUBLE_ARRAY``."""


@dataclass(frozen=True)
class ApplyRequest:
    """A service request for a robot or a filter.

    Attributes:
        target: ``franka``, ``xarm``, ``ur`` or ``gravity_compensation``.
        service_type: ``"pkg/srv/Type"``.
        service_name: where to send it.
        fields: the request's fields (nested dictionaries and lists).
    """

    target: str
    service_type: str
    service_name: str
    fields: dict[str, Any]

    def to_yaml(self) -> str:
        """The request as YAML, headed by a comment with the type and the service."""
        body = yaml.safe_dump(self.fields, default_flow_style=None, sort_keys=False, width=1000)
        return f"# {self.service_type} on {self.service_name}\n{body}"

    @property
    def package(self) -> str:
        """The interface package the service type lives in."""
        return self.service_type.split("/", 1)[0]


def build_apply_request(settings: Any, out: Any, force: bool = False) -> tuple[ApplyRequest | None, str]:
    """The request for ``settings.apply_target`` from a stream estimate, or None and why not.

    Args:
        settings: a :class:`~payload_estimator.settings.Settings` (``apply_target``,
            ``max_payload_mass``, service names, ``gravity_compensation_node`` and ``_prefix``).
        out: a :class:`~payload_estimator.pipeline.stream.StreamEstimate`, or None.
        force: apply even if not converged, not physically consistent, poorly fitting or
            not identified (never beyond the mass limit, never non-finite):
            :func:`~payload_estimator.outputs.handover.check_handover`, with the inertia
            required for the targets that take it (``franka``).

    Returns:
        ``(request, reason)``: the request and why it may be sent (``"converged, physically
        consistent, identified and fitting"`` or ``"forced: ..."``), or ``(None, why not)``.
    """
    target = settings.apply_target
    if target not in SERVICE_TYPES:
        return None, (f"apply_target is {target!r}: set it to franka, xarm, ur or gravity_compensation "
                      "to hand the estimate to the robot")
    if out is None:
        return None, "no estimate yet"
    check = check_handover(out.estimate, inertia=target not in TARGETS_WITHOUT_INERTIA,
                           converged=bool(out.converged), convergence_reason=out.reason,
                           max_mass=settings.max_payload_mass, force=force)
    if not check:
        return None, "; ".join(check.reasons) + ("" if check.hard else " (force: true overrides)")
    if target == "franka":
        fields = franka_set_load_fields(out.params_in_flange)
        name = settings.franka_set_load_service
    elif target == "xarm":
        fields = xarm_set_tcp_load_fields(out.params_in_flange)
        name = settings.xarm_set_tcp_load_service
    elif target == "ur":
        fields = ur_set_payload_fields(out.params_in_flange)
        name = settings.ur_set_payload_service
    else:
        node = settings.gravity_compensation_node.rstrip("/")
        if not node:
            return None, "gravity_compensation_node is empty: name the node that has tool.mass and tool.CoG"
        (mass_name, mass), (cog_name, cog) = gravity_compensation_parameters(
            out.estimate.params, settings.gravity_compensation_prefix).items()
        fields = {
            "parameters": [
                {"name": mass_name, "value": {"type": PARAMETER_DOUBLE, "double_value": mass}},
                {"name": cog_name, "value": {"type": PARAMETER_DOUBLE_ARRAY, "double_array_value": cog}},
            ]
        }
        name = f"{node}/set_parameters"
    return ApplyRequest(target, SERVICE_TYPES[target], name, fields), (
        check.status if check.forced else "converged, physically consistent, identified and fitting")
