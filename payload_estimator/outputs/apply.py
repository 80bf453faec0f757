"""The request ``~/apply`` sends for the configured target, checked and rendered as YAML (ROS-free).

Targets (``apply_target``):

* ``franka``: ``franka_msgs/srv/SetLoad`` on ``franka_set_load_service``:
  ``mass`` (kg), ``center_of_mass`` (flange to load COM, m, flange frame),
  ``load_inertia`` (3x3 about the COM, flange axes, column-major, kg m²).
* ``xarm``: ``xarm_msgs/srv/SetTcpLoad`` on ``xarm_set_tcp_load_service``:
  ``weight`` (kg), ``center_of_gravity`` ([x, y, z] mm, flange frame).
* ``ur``: ``ur_msgs/srv/SetPayload`` on ``ur_set_payload_service``:
  ``mass`` (kg), ``center_of_gravity`` (``{x, y, z}`` m, tool flange frame ``tool0``),
  ``ixx`` ... ``iyz`` (about the COM, flange axes, kg m²; ur_msgs 2.6 on: an older
  ``SetPayload`` has no such fields, and they are left out; ur_msgs 3's, which has
  one ``geometry_msgs/Inertia payload`` instead, gets them there).
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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from payload_estimator.outputs.handover import check_handover
from payload_estimator.outputs.robot_load import (
    UR_INERTIA_FIELDS,
    franka_set_load_fields,
    gravity_compensation_parameters,
    ur_inertia_payload_fields,
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
        optional: names of top-level fields that older definitions of the service type lack;
            they are left out when the installed type has no such field (ur_msgs before 2.6
            has no inertia in ``SetPayload``).
        alternatives: the same request for other definitions of the type, tried in turn when the
            installed one lacks a field of ``fields`` that is not optional (ur_msgs 3's ``SetPayload``).
    """

    target: str
    service_type: str
    service_name: str
    fields: dict[str, Any]
    optional: tuple[str, ...] = ()
    alternatives: tuple[dict[str, Any], ...] = ()

    def to_yaml(self) -> str:
        """The request as YAML, headed by a comment with the type and the service."""
        body = yaml.safe_dump(self.fields, default_flow_style=None, sort_keys=False, width=1000)
        return f"# {self.service_type} on {self.service_name}\n{body}"

    def fields_for(self, has: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
        """The fields for the installed definition of the type, and the optional ones left out.

        ``fields`` less the optional fields the type lacks; if it lacks one that is not optional, the
        first of ``alternatives`` it has every field of; else ``fields`` (filling then names the
        missing field).

        Args:
            has: the field names of the installed request type (``get_fields_and_field_types()``).
        """
        names = set(has)
        if not set(self.fields) - set(self.optional) <= names:
            for alternative in self.alternatives:
                if set(alternative) <= names:
                    return alternative, []
            return self.fields, []
        left_out = [name for name in self.optional if name in self.fields and name not in names]
        return {k: v for k, v in self.fields.items() if k not in left_out}, left_out

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
            required for the targets that take it (``franka``, ``ur``).

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
    optional: tuple[str, ...] = ()
    alternatives: tuple[dict[str, Any], ...] = ()
    if target == "franka":
        fields = franka_set_load_fields(out.params_in_flange)
        name = settings.franka_set_load_service
    elif target == "xarm":
        fields = xarm_set_tcp_load_fields(out.params_in_flange)
        name = settings.xarm_set_tcp_load_service
    elif target == "ur":
        fields = ur_set_payload_fields(out.params_in_flange)
        name = settings.ur_set_payload_service
        optional, alternatives = UR_INERTIA_FIELDS, (ur_inertia_payload_fields(fields),)
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
    return ApplyRequest(target, SERVICE_TYPES[target], name, fields, optional, alternatives), (
        check.status if check.forced else "converged, physically consistent, identified and fitting")
