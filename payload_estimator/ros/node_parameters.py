"""The estimator node's parameters on rclpy: one per :class:`~payload_estimator.settings.Settings` field.

Each is declared as :func:`~payload_estimator.supervision.parameters.parameter_specs`
describes it (type, default, description, choices, read-only), and read back as
a plain value.
"""

from __future__ import annotations

from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from payload_estimator.supervision.parameters import parameter_specs

__all__ = ["declare_parameters", "parameter_value", "parameter_values"]

_PARAMETER_TYPES = {
    "bool": Parameter.Type.BOOL,
    "integer": Parameter.Type.INTEGER,
    "double": Parameter.Type.DOUBLE,
    "string": Parameter.Type.STRING,
    "string_array": Parameter.Type.STRING_ARRAY,
    "double_array": Parameter.Type.DOUBLE_ARRAY,
}


def declare_parameters(node: Node) -> None:
    """Declare every parameter on ``node`` (its overrides, e.g. a parameter file, give the values)."""
    for spec in parameter_specs():
        descriptor = ParameterDescriptor(description=spec.description, read_only=spec.read_only)
        if spec.choices:
            descriptor.additional_constraints = "one of: " + ", ".join(spec.choices)
        if isinstance(spec.default, list) and not spec.default:
            # rclpy cannot infer the type of an empty list: declare the type, value set below
            node.declare_parameter(spec.name, _PARAMETER_TYPES[spec.type], descriptor)
        else:
            node.declare_parameter(spec.name, spec.default, descriptor)
        if parameter_value(node, spec.name) is None:  # no default, or "[]" in a parameter file
            node.set_parameters([Parameter(spec.name, _PARAMETER_TYPES[spec.type], [])])


def parameter_value(node: Node, name: str) -> Any:
    """The value of parameter ``name`` (None: not set)."""
    try:
        return node.get_parameter(name).value
    except ParameterUninitializedException:
        return None


def parameter_values(node: Node) -> dict[str, Any]:
    """Every parameter's value, by name."""
    return {spec.name: parameter_value(node, spec.name) for spec in parameter_specs()}
