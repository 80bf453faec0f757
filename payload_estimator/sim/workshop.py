"""Workshop tools as a person holds them up to the sensor: 2-4 parts of different densities each.

The estimators are judged on objects like those users pick up: steel heads on wooden
or plastic handles, thin and long blades, light precision tools. Every tool is held at its handle
end, the handle on the sensor face (``z >= 0``) and the tool along the sensor's +z axis, heads
and jaws off to +x where a real tool has them. Parts never overlap, so the truth is the exact sum
of the parts' solid inertias (:meth:`~payload_estimator.sim.payloads.Payload.params`); the
envelope is the union of the parts (what a user who modelled the tool would give), and
:func:`bounding_box` the box a user who knows only the outline would give.

Densities, kg/m³: steel 7850, aluminium 2700, plastic (ABS, PP) 1100, hardwood 700, rubber 1100,
brush bristles (packed nylon) 400.
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.shapes import Box, Cylinder, Shape, Union
from payload_estimator.errors import ConfigurationError
from payload_estimator.sim.payloads import Part, Payload

__all__ = ["WORKSHOP_TOOLS", "bounding_box", "get_tool"]

STEEL, ALUMINIUM, PLASTIC, WOOD, RUBBER, BRISTLES = 7850.0, 2700.0, 1100.0, 700.0, 1100.0, 400.0
_ALONG_X = (0.0, np.pi / 2, 0.0)
"""A cylinder's axis turned from z to x."""


def _part(shape: Shape, density: float) -> Part:
    return Part(shape, density * shape.volume)


def _tool(name: str, description: str, *parts: tuple[Shape, float]) -> Payload:
    made = tuple(_part(shape, density) for shape, density in parts)
    return Payload(name, description, made, Union(parts=tuple(p.shape for p in made)))


def bounding_box(payload: Payload) -> Box:
    """The axis-aligned box around a payload's envelope: all a user may know of its shape."""
    lo, hi = payload.envelope.bounds()
    return Box(size=tuple(hi - lo), xyz=tuple(0.5 * (lo + hi)))


WORKSHOP_TOOLS: tuple[Payload, ...] = (
    _tool("ws_claw_hammer", "claw hammer: 28 cm hardwood handle, 10 cm steel head",
          (Cylinder(radius=0.014, height=0.28, xyz=(0.0, 0.0, 0.14)), WOOD),
          (Box(size=(0.10, 0.025, 0.025), xyz=(0.02, 0.0, 0.2925)), STEEL)),
    _tool("ws_club_hammer", "club hammer: 25 cm handle, 1 kg steel head",
          (Cylinder(radius=0.016, height=0.25, xyz=(0.0, 0.0, 0.125)), WOOD),
          (Box(size=(0.09, 0.038, 0.035), xyz=(0.0, 0.0, 0.2675)), STEEL)),
    _tool("ws_mallet", "rubber mallet: hardwood handle, rubber head across it",
          (Cylinder(radius=0.012, height=0.25, xyz=(0.0, 0.0, 0.125)), WOOD),
          (Cylinder(radius=0.03, height=0.09, xyz=(0.0, 0.0, 0.28), rpy=_ALONG_X), RUBBER)),
    _tool("ws_file", "flat file: plastic handle, 20 cm steel blade",
          (Cylinder(radius=0.013, height=0.10, xyz=(0.0, 0.0, 0.05)), PLASTIC),
          (Box(size=(0.02, 0.005, 0.20), xyz=(0.0, 0.0, 0.20)), STEEL)),
    _tool("ws_ruler", "30 cm steel rule with a plastic grip",
          (Box(size=(0.035, 0.004, 0.03), xyz=(0.0, 0.0, 0.015)), PLASTIC),
          (Box(size=(0.03, 0.001, 0.27), xyz=(0.0, 0.0, 0.165)), STEEL)),
    _tool("ws_pliers", "pliers: two plastic grips, steel jaws",
          (Box(size=(0.012, 0.02, 0.10), xyz=(-0.009, 0.0, 0.05)), PLASTIC),
          (Box(size=(0.012, 0.02, 0.10), xyz=(0.009, 0.0, 0.05)), PLASTIC),
          (Box(size=(0.03, 0.012, 0.07), xyz=(0.0, 0.0, 0.135)), STEEL)),
    _tool("ws_clamp", "bar clamp: steel bar, plastic jaws, steel screw",
          (Box(size=(0.02, 0.006, 0.30), xyz=(0.0, 0.0, 0.15)), STEEL),
          (Box(size=(0.06, 0.03, 0.03), xyz=(0.04, 0.0, 0.285)), PLASTIC),
          (Box(size=(0.06, 0.03, 0.04), xyz=(0.04, 0.0, 0.05)), PLASTIC),
          (Cylinder(radius=0.006, height=0.08, xyz=(0.05, 0.0, 0.11)), STEEL)),
    _tool("ws_screwdriver", "screwdriver: plastic handle, 12 cm steel shaft",
          (Cylinder(radius=0.015, height=0.10, xyz=(0.0, 0.0, 0.05)), PLASTIC),
          (Cylinder(radius=0.003, height=0.12, xyz=(0.0, 0.0, 0.16)), STEEL)),
    _tool("ws_precision_driver", "precision screwdriver (13 g): aluminium handle, steel blade",
          (Cylinder(radius=0.004, height=0.08, xyz=(0.0, 0.0, 0.04)), ALUMINIUM),
          (Cylinder(radius=0.0012, height=0.05, xyz=(0.0, 0.0, 0.105)), STEEL)),
    _tool("ws_allen_key", "allen key (6 g): an L of 3 mm steel",
          (Cylinder(radius=0.0015, height=0.08, xyz=(0.0, 0.0, 0.04)), STEEL),
          (Cylinder(radius=0.0015, height=0.025, xyz=(0.014, 0.0, 0.0815), rpy=_ALONG_X), STEEL)),
    _tool("ws_wrench", "combination wrench: steel shank, open head",
          (Box(size=(0.025, 0.005, 0.18), xyz=(0.0, 0.0, 0.09)), STEEL),
          (Box(size=(0.045, 0.006, 0.03), xyz=(0.005, 0.0, 0.195)), STEEL),
          (Box(size=(0.012, 0.006, 0.02), xyz=(0.02, 0.0, 0.22)), STEEL)),
    _tool("ws_chisel", "wood chisel: hardwood handle, steel blade",
          (Cylinder(radius=0.015, height=0.11, xyz=(0.0, 0.0, 0.055)), WOOD),
          (Box(size=(0.02, 0.006, 0.14), xyz=(0.0, 0.0, 0.18)), STEEL)),
    _tool("ws_brush", "paint brush: wooden handle, aluminium ferrule, bristles",
          (Cylinder(radius=0.01, height=0.15, xyz=(0.0, 0.0, 0.075)), WOOD),
          (Box(size=(0.05, 0.016, 0.015), xyz=(0.0, 0.0, 0.1575)), ALUMINIUM),
          (Box(size=(0.05, 0.015, 0.05), xyz=(0.0, 0.0, 0.19)), BRISTLES)),
    _tool("ws_knife", "utility knife: plastic body, steel insert and blade",
          (Box(size=(0.025, 0.018, 0.15), xyz=(0.0, 0.0, 0.075)), PLASTIC),
          (Box(size=(0.015, 0.004, 0.06), xyz=(0.0, 0.0, 0.18)), STEEL),
          (Box(size=(0.018, 0.001, 0.03), xyz=(0.004, 0.0, 0.225)), STEEL)),
    _tool("ws_soldering_iron", "soldering iron: plastic grip, aluminium barrel, steel tip",
          (Cylinder(radius=0.012, height=0.12, xyz=(0.0, 0.0, 0.06)), PLASTIC),
          (Cylinder(radius=0.006, height=0.06, xyz=(0.0, 0.0, 0.15)), ALUMINIUM),
          (Cylinder(radius=0.003, height=0.08, xyz=(0.0, 0.0, 0.22)), STEEL)),
    _tool("ws_level", "30 cm spirit level: aluminium web, plastic vial block and caps",
          (Box(size=(0.004, 0.05, 0.30), xyz=(0.0, 0.0, 0.15)), ALUMINIUM),
          (Box(size=(0.02, 0.03, 0.04), xyz=(0.012, 0.0, 0.15)), PLASTIC),
          (Box(size=(0.02, 0.05, 0.01), xyz=(0.012, 0.0, 0.305)), PLASTIC)),
    _tool("ws_saw", "small hand saw: hardwood handle, steel blade",
          (Box(size=(0.025, 0.08, 0.11), xyz=(0.0, 0.0, 0.055)), WOOD),
          (Box(size=(0.001, 0.08, 0.24), xyz=(0.0, 0.0, 0.23)), STEEL)),
    _tool("ws_scraper", "putty knife: plastic handle, steel tang and blade",
          (Cylinder(radius=0.012, height=0.10, xyz=(0.0, 0.0, 0.05)), PLASTIC),
          (Box(size=(0.01, 0.003, 0.03), xyz=(0.0, 0.0, 0.115)), STEEL),
          (Box(size=(0.06, 0.001, 0.08), xyz=(0.0, 0.0, 0.17)), STEEL)),
)


def get_tool(name: str) -> Payload:
    """Return a workshop tool by name."""
    for tool in WORKSHOP_TOOLS:
        if tool.name == name:
            return tool
    raise ConfigurationError(f"unknown tool {name!r}; choose one of {', '.join(t.name for t in WORKSHOP_TOOLS)}")
