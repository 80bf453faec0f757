"""What each robot's "set load" interface wants, built from an estimate (ROS-free).

* Franka ``franka_msgs/srv/SetLoad``: ``mass`` (kg), ``center_of_mass``
  (flange to load COM, m, flange frame), ``load_inertia`` (3x3 about the COM,
  flange axes, column-major, kg·m²).
* uFactory ``xarm_msgs/srv/SetTcpLoad``: ``weight`` (kg), ``center_of_gravity``
  ([x, y, z] in mm, flange frame).
* Universal Robots ``ur_msgs/srv/SetPayload`` (ur_robot_driver's ``io_and_status_controller``):
  ``mass`` (kg), ``center_of_gravity`` (``geometry_msgs/Vector3``, m, in the tool flange frame
  ``tool0``) and, since ur_msgs 2.6 (the driver passes them to the controller's
  ``set_target_payload``), ``ixx`` ``iyy`` ``izz`` ``ixy`` ``ixz`` ``iyz`` (the inertia matrix about the
  COM in the flange's axes, kg·m²); ``transition_time`` is left at zero (applied at once). ur_msgs 3
  (Rolling) puts the same in one ``geometry_msgs/Inertia payload`` (:func:`ur_inertia_payload_fields`).
* ros2_control ``control_toolbox`` GravityCompensation filter parameters:
  ``tool.mass`` (kg) and ``tool.CoG`` ([x, y, z] in m, in the filter's
  ``sensor_frame``), under the prefix the filter was configured with (in a
  filter chain ``<chain>.filterN.params.``; Jazzy and later: Humble's
  control_toolbox has no such filter).

The functions take the parameters already expressed in the frame the robot
expects; :meth:`InertialParameters.transformed` moves them there from the estimate's frame.
"""

from __future__ import annotations

from payload_estimator.core.inertia import InertialParameters

__all__ = [
    "franka_set_load_fields",
    "xarm_set_tcp_load_fields",
    "ur_set_payload_fields",
    "UR_INERTIA_FIELDS",
    "ur_inertia_payload_fields",
    "gravity_compensation_parameters",
]

UR_INERTIA_FIELDS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
"""``ur_msgs/srv/SetPayload``'s inertia fields (ur_msgs 2.6 on); older definitions have none."""


def franka_set_load_fields(params_in_flange: InertialParameters) -> dict[str, object]:
    """Fields of a ``franka_msgs/srv/SetLoad`` request (parameters in the flange frame)."""
    I = params_in_flange.inertia_com
    return {
        "mass": float(params_in_flange.mass),
        "center_of_mass": [float(x) for x in params_in_flange.com],
        "load_inertia": [float(x) for x in I.reshape(-1, order="F")],  # column-major
    }


def xarm_set_tcp_load_fields(params_in_flange: InertialParameters) -> dict[str, object]:
    """Fields of an ``xarm_msgs/srv/SetTcpLoad`` request: kg and mm (flange frame)."""
    return {
        "weight": float(params_in_flange.mass),
        "center_of_gravity": [float(x) * 1000.0 for x in params_in_flange.com],
    }


def ur_set_payload_fields(params_in_flange: InertialParameters) -> dict[str, object]:
    """Fields of a ``ur_msgs/srv/SetPayload`` request: kg, m and kg·m² (tool flange frame ``tool0``).

    The inertia entries are those of the matrix about the COM in the flange's axes (UR's
    ``set_target_payload``: origin in the CoG, axes aligned with the tool flange), not products of inertia.
    """
    x, y, z = (float(v) for v in params_in_flange.com)
    I = params_in_flange.inertia_com
    inertia = {name: float(I[i, j]) for name, (i, j) in
               zip(UR_INERTIA_FIELDS, ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)), strict=True)}
    return {"mass": float(params_in_flange.mass), "center_of_gravity": {"x": x, "y": y, "z": z}, **inertia}


def ur_inertia_payload_fields(set_payload_fields: dict[str, object]) -> dict[str, object]:
    """The same request for ur_msgs 3's ``SetPayload`` (``geometry_msgs/Inertia payload``: ``m``, ``com``, ``ixx`` ...).

    Args:
        set_payload_fields: what :func:`ur_set_payload_fields` returns.
    """
    inertia = {name: set_payload_fields[name] for name in UR_INERTIA_FIELDS}
    return {"payload": {"m": set_payload_fields["mass"], "com": set_payload_fields["center_of_gravity"], **inertia}}


def gravity_compensation_parameters(params_in_sensor: InertialParameters, prefix: str = "") -> dict[str, object]:
    """``control_toolbox`` GravityCompensation parameters (COM in the filter's sensor frame).

    Args:
        params_in_sensor: the payload in the filter's ``sensor_frame``.
        prefix: the filter's parameter prefix, e.g. ``sensor_filter_chain.filter1.params`` (a missing
            trailing dot is added, as ``filters`` does); empty for a filter configured on its own.
    """
    if prefix and not prefix.endswith("."):
        prefix += "."
    return {
        f"{prefix}tool.mass": float(params_in_sensor.mass),
        f"{prefix}tool.CoG": [float(x) for x in params_in_sensor.com],
    }
