"""Sensor noise levels of Nadeau et al.'s Table II (from the Robotiq FT-300 specification).

Nadeau, Giamou and Kelly, "Fast Object Inertial Parameter Identification for Collaborative
Robots", Table II: the standard deviations of zero-mean Gaussian noise they add in simulation.
"""

from __future__ import annotations

from dataclasses import dataclass

from payload_estimator.errors import ConfigurationError

__all__ = ["NoiseLevel", "TABLE_II", "get_noise"]


@dataclass(frozen=True)
class NoiseLevel:
    """Standard deviations of zero-mean Gaussian noise, per axis.

    Attributes:
        ang_acc: rad/s².
        lin_acc: m/s².
        force: N.
        torque: N·m.
    """

    name: str
    ang_acc: float
    lin_acc: float
    force: float
    torque: float


TABLE_II: dict[str, NoiseLevel] = {
    "none": NoiseLevel("none", 0.0, 0.0, 0.0, 0.0),
    "low": NoiseLevel("low", 0.25, 0.025, 0.05, 0.0025),
    "moderate": NoiseLevel("moderate", 0.5, 0.05, 0.1, 0.005),
    "high": NoiseLevel("high", 1.0, 0.1, 0.33, 0.0067),
}


def get_noise(name: str) -> NoiseLevel:
    """Return a Table II level by name: none, low, moderate or high."""
    try:
        return TABLE_II[name]
    except KeyError:
        raise ConfigurationError(f"unknown noise level {name!r}; choose one of {', '.join(TABLE_II)}") from None
