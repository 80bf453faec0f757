"""Sensor noise levels of paper 004, Table II (from the Robotiq FT-300 specification)."""

from __future__ import annotations

from dataclasses import dataclass

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
    """A Table II level by name: none, low, moderate or high."""
    try:
        return TABLE_II[name]
    except KeyError:
        raise ValueError(f"unknown noise level {name!r}; choose one of {', '.join(TABLE_II)}") from None
