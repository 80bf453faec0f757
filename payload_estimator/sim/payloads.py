"""A catalogue of payloads with exactly known inertial parameters.

Each payload is a set of solid parts (uniform density each; a negative mass
carves a hole) placed in the sensor frame ``S``: the object sits on the sensor
face (``z >= 0``), welded to it as in Nadeau et al. The ground truth is the exact
sum of the parts' inertial parameters; the *envelope* is the outer shape that
a user would hand to PMD (the weights and holes inside are unknown to it).

The :data:`PAPER_OBJECTS` reproduce the modular test object of Nadeau, Giamou and Kelly,
"Fast Object Inertial Parameter Identification for Collaborative Robots" (Fig. 2-3): a 3D
printed PLA frame with holes holding 101 g steel or 17 g ABS weights in
several configurations. Everyday tools (a hammer, a drill, a box with an
off-centre weight) complete the set for the end-to-end benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.shapes import Box, Cylinder, Shape, Union
from payload_estimator.errors import ConfigurationError

__all__ = ["Payload", "PAYLOADS", "PAPER_OBJECTS", "TOOL_OBJECTS", "get_payload"]

PLA_DENSITY = 1240.0 * 0.2  # kg/m³, 3D print at 20 % infill
STEEL_DENSITY = 7850.0
CAST_IRON_DENSITY = 7200.0
ALUMINIUM_DENSITY = 2700.0
HOLE_RADIUS = 0.0125  # m
STEEL_WEIGHT = 0.101  # kg, Nadeau et al.'s Fig. 3
ABS_WEIGHT = 0.017  # kg


@dataclass(frozen=True)
class Part:
    """A solid of uniform density: its shape (pose in S) and its mass (kg, negative for a hole)."""

    shape: Shape
    mass: float


@dataclass(frozen=True)
class Payload:
    """A payload with known inertial parameters.

    Attributes:
        name: short identifier.
        description: one line for tables and plots.
        parts: the solids it is made of, in S.
        envelope: the outer shape (in S) a user would give PMD.
    """

    name: str
    description: str
    parts: tuple[Part, ...]
    envelope: Shape

    @property
    def params(self) -> InertialParameters:
        """Exact inertial parameters about the sensor origin."""
        total = InertialParameters.zero()
        for part in self.parts:
            total = total + part.shape.solid_inertia(part.mass)
        return total

    @property
    def bbox_lengths(self) -> np.ndarray:
        """(3,) side lengths of the envelope's bounding box along the sensor axes, m (eqs. 11-12)."""
        lo, hi = self.envelope.bounds()
        return hi - lo

    @property
    def mass(self) -> float:
        """Total mass, kg."""
        return self.params.mass


def _frame_with_weights(
    name: str,
    description: str,
    size: tuple[float, float, float],
    centre_xy: tuple[float, float],
    weights: list[tuple[float, float, float]],
) -> Payload:
    """A PLA frame of ``size`` on the sensor face, with vertical holes holding weights.

    ``weights``: (x, y, mass) of each weight (a cylinder filling a through hole);
    an empty hole is simply not listed (holes exist only where weights sit).
    """
    sx, sy, sz = size
    cx, cy = centre_xy
    frame = Box(size=size, xyz=(cx, cy, sz / 2))
    parts = [Part(frame, PLA_DENSITY * frame.volume)]
    for x, y, mass in weights:
        hole = Cylinder(radius=HOLE_RADIUS, height=sz, xyz=(cx + x, cy + y, sz / 2))
        parts.append(Part(hole, -PLA_DENSITY * hole.volume))
        parts.append(Part(hole, mass))
    return Payload(name, description, tuple(parts), frame)


S, A = STEEL_WEIGHT, ABS_WEIGHT

PAPER_OBJECTS: tuple[Payload, ...] = (
    _frame_with_weights(
        "hammer", "25 cm bar, two steel weights at one end", (0.25, 0.05, 0.04), (0.06, 0.0),
        [(0.10, 0.0, S), (0.065, 0.0, S)],
    ),
    _frame_with_weights(
        "dumbbell", "25 cm bar, steel at both ends", (0.25, 0.05, 0.04), (0.03, 0.0),
        [(-0.10, 0.0, S), (0.10, 0.0, S)],
    ),
    _frame_with_weights(
        "mixed", "20 cm bar, steel and ABS weights", (0.20, 0.05, 0.04), (0.04, 0.01),
        [(-0.08, 0.0, S), (0.04, 0.0, A), (0.08, 0.0, A)],
    ),
    _frame_with_weights(
        "centre", "20 cm bar, one steel weight off the mount", (0.20, 0.05, 0.04), (0.05, 0.0),
        [(0.0, 0.0, S)],
    ),
    _frame_with_weights(
        "corner", "15 cm plate, steel in a corner", (0.15, 0.15, 0.03), (0.02, 0.02),
        [(0.05, 0.05, S), (-0.05, 0.05, A)],
    ),
    _frame_with_weights(
        "diagonal", "15 cm plate, steel on a diagonal", (0.15, 0.15, 0.03), (0.0, 0.03),
        [(0.05, 0.05, S), (-0.05, -0.05, S), (0.05, -0.05, A)],
    ),
    _frame_with_weights(
        "cube", "6 cm cube with a steel insert", (0.06, 0.06, 0.06), (0.015, -0.01),
        [(0.0, 0.0, S)],
    ),
)

# The tower's two steel weights sit in a horizontal pocket near its top.
_tower_frame = Box(size=(0.05, 0.05, 0.20), xyz=(0.01, 0.0, 0.10))
_tower_pocket = Cylinder(radius=HOLE_RADIUS, height=0.05, xyz=(0.01, 0.0, 0.16), rpy=(0.0, np.pi / 2, 0.0))
_tower = Payload(
    "tower",
    "20 cm tall column, steel near the top",
    (
        Part(_tower_frame, PLA_DENSITY * _tower_frame.volume),
        Part(_tower_pocket, -PLA_DENSITY * _tower_pocket.volume),
        Part(_tower_pocket, 2 * S),
    ),
    _tower_frame,
)
PAPER_OBJECTS = PAPER_OBJECTS + (_tower,)

# --------------------------------------------------------------- everyday tools
_handle = Cylinder(radius=0.015, height=0.28, xyz=(0.0, 0.0, 0.14))
_head = Box(size=(0.10, 0.03, 0.03), xyz=(0.02, 0.0, 0.265))
_hammer = Payload(
    "claw_hammer",
    "hammer held by its handle: 28 cm wooden handle, steel head",
    (Part(_handle, 700.0 * _handle.volume), Part(_head, STEEL_DENSITY * _head.volume)),
    Union(parts=(_handle, _head)),
)

_drill_body = Box(size=(0.20, 0.06, 0.08), xyz=(0.03, 0.0, 0.20))
_drill_grip = Box(size=(0.05, 0.05, 0.12), xyz=(0.0, 0.0, 0.10))
_drill_battery = Box(size=(0.10, 0.08, 0.04), xyz=(0.0, 0.0, 0.02))
_drill = Payload(
    "drill",
    "cordless drill: motor body, grip and battery pack",
    (
        Part(_drill_body, 0.75),
        Part(_drill_grip, 0.25),
        Part(_drill_battery, 0.55),
    ),
    Union(parts=(_drill_battery, _drill_grip, _drill_body)),
)

_carton = Box(size=(0.20, 0.15, 0.10), xyz=(0.0, 0.0, 0.05))
_insert = Box(size=(0.05, 0.05, 0.04), xyz=(0.06, 0.04, 0.025))
_box = Payload(
    "offset_box",
    "20 cm carton with a 0.5 kg block in one corner",
    (Part(_carton, 0.15), Part(_insert, 0.5)),
    _carton,
)

_al = Box(size=(0.10, 0.08, 0.05), xyz=(0.02, 0.0, 0.025))
_block = Payload(
    "alu_block",
    "1.1 kg aluminium block, off-centre",
    (Part(_al, ALUMINIUM_DENSITY * _al.volume),),
    _al,
)

_vise_body = Box(size=(0.11, 0.07, 0.045), xyz=(0.0, 0.0, 0.0225))
_vise_jaw = Box(size=(0.10, 0.02, 0.028), xyz=(0.0, 0.025, 0.059))
_vise_screw = Cylinder(radius=0.005, height=0.12, xyz=(0.0, -0.06, 0.03), rpy=(np.pi / 2, 0.0, 0.0))
_vise = Payload(
    "vise",
    "3 kg bench vise: cast-iron body, a steel jaw on one side, its screw sticking out",
    (Part(_vise_body, CAST_IRON_DENSITY * _vise_body.volume), Part(_vise_jaw, STEEL_DENSITY * _vise_jaw.volume),
     Part(_vise_screw, STEEL_DENSITY * _vise_screw.volume)),
    Union(parts=(_vise_body, _vise_jaw, _vise_screw)),
)

TOOL_OBJECTS: tuple[Payload, ...] = (_hammer, _drill, _box, _block, _vise)

PAYLOADS: dict[str, Payload] = {p.name: p for p in PAPER_OBJECTS + TOOL_OBJECTS}


def get_payload(name: str) -> Payload:
    """Return a payload of the catalogue by name."""
    try:
        return PAYLOADS[name]
    except KeyError:
        raise ConfigurationError(f"unknown payload {name!r}; choose one of {', '.join(PAYLOADS)}") from None
