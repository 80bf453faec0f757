"""A work cycle on the MuJoCo arm: picks and places of catalogue payloads, with contacts.

What ``demo --scenario cycle`` and ``simulate --scenario cycle`` run: the payload changes and the
contacts happen in the physics engine (:class:`~payload_estimator.sim.stepper.WorkSchedule`); the
contacts are those of :mod:`payload_estimator.sim.cycle` (forces on the held payload, world frame),
and a grasp or a release may take time (:func:`~payload_estimator.sim.cycle.transfer_contacts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.core.shapes import Box
from payload_estimator.sim.cycle import EMPTY_GRIPPER_TIP_IN_SENSOR, Contact, far_end, transfer_contacts
from payload_estimator.sim.payloads import Payload, get_payload
from payload_estimator.sim.workshop import get_tool

if TYPE_CHECKING:
    from payload_estimator.robots import RobotSpec
    from payload_estimator.sim.run import SimulatedRun
    from payload_estimator.sim.stepper import WorkSchedule
    from payload_estimator.sim.trajectories import PickAndPlace

__all__ = ["ArmCycle", "arm_work_cycle", "ARM_CYCLE_PAYLOADS", "STATION_ARC_M", "box_around"]


@dataclass(frozen=True, eq=False)
class ArmCycle:
    """A work cycle for the MuJoCo arm (:func:`arm_work_cycle`).

    Attributes:
        trajectory: the arm's motion (a :class:`~payload_estimator.sim.trajectories.PickAndPlace`
            repeated once per pick).
        schedule: the payload changes and the contacts
            (:class:`~payload_estimator.sim.stepper.WorkSchedule`).
        first: what the gripper holds at the start (an empty gripper).
        held: ``((t, name), ...)`` what the gripper holds from each change on ("empty" or a
            catalogue name).
        contacts: the contacts, named (the transfers' forces are the schedule's only).
        duration: s.
        robot: the arm: a built-in robot's name or a spec.
        payloads: the catalogue names picked, in order.
        transfers: ``((start, end), ...)`` s, for each change of :attr:`held`, when its load moved over
            (start == end: at once); from its end on the gripper bears the new payload alone.
    """

    trajectory: PickAndPlace
    schedule: WorkSchedule
    first: InertialParameters
    held: tuple[tuple[float, str], ...]
    contacts: tuple[Contact, ...]
    duration: float
    robot: str | RobotSpec = "panda"
    payloads: tuple[str, ...] = ()
    transfers: tuple[tuple[float, float], ...] = ()

    @property
    def envelope(self) -> Box:
        """:func:`box_around` the cycle's payloads."""
        return box_around(self.payloads)

    def simulate(self, noise: str = "moderate", seed: int = 0, **kw) -> SimulatedRun:
        """Simulate this cycle in MuJoCo (:func:`~payload_estimator.sim.mujoco_sim.simulate`).

        ``kw``: its other arguments, e.g. ``wrench_rate_hz``, ``imu``, ``progress``."""
        from payload_estimator.sim.mujoco_sim import simulate

        return simulate(robot=self.robot, payload=self.first, trajectory=self.trajectory, duration=self.duration,
                        noise=noise, seed=seed, schedule=self.schedule, **kw)

    @property
    def transfer_starts(self) -> np.ndarray:
        """(K,) s, where each change's load began to move over (the change itself, without transfers)."""
        return np.array([m[0] for m in self.transfers]) if self.transfers else np.array([t for t, _ in self.held])

    @property
    def transfer_ends(self) -> np.ndarray:
        """(K,) s, where each change's load had moved over: from there on the new payload alone."""
        return np.array([m[1] for m in self.transfers]) if self.transfers else np.array([t for t, _ in self.held])

    def phi_after(self) -> np.ndarray:
        """(K, 10) what is held from each change on."""
        return np.array([p.phi for _, p in self.schedule.changes])


ARM_CYCLE_PAYLOADS = ("claw_hammer", "ws_ruler", "drill", "hammer")
"""What the arm picks, one per cycle: the claw hammer (845 g), the workshop's 68 g steel ruler.

Then the cordless drill (1.55 kg) and the 316 g ``hammer`` of Nadeau et al.'s modular test
object; the ruler is a light one."""


STATION_ARC_M = 0.22
"""How far the flange travels from home to the pick and to the place at most, m, along its arc about the base.

The same work on every arm: the Panda, the FR3 and the xArms keep their 0.6 rad of base swing (18 to 22 cm),
the longer UR5e and UR10e turn their bases 0.35 and 0.25 rad. At 0.6 rad the UR10e carried its parts 52 cm
each way under the 0.25 m/s TCP cap, a cycle of 24 s instead of 13 to 14 with its wrist level for up to 10 s
at a time, the F/T offsets' whole window (``offset_window_s``): the offsets kept between its tilts drifted
unseen, and the tracking figures were the slow cycle's, not the arm's."""


def box_around(names: tuple[str, ...], margin: float = 0.01) -> Box:
    """Return the box around the envelopes of catalogue payloads or workshop tools, ``margin`` m more on each side.

    The one shape a user who follows several payloads would give PMD."""
    bounds = [_catalogue(name).envelope.bounds() for name in names]
    lo = np.min([b[0] for b in bounds], axis=0) - margin
    hi = np.max([b[1] for b in bounds], axis=0) + margin
    size, centre = hi - lo, 0.5 * (lo + hi)
    return Box(size=(float(size[0]), float(size[1]), float(size[2])),
               xyz=(float(centre[0]), float(centre[1]), float(centre[2])))


def _catalogue(name: str) -> Payload:
    try:
        return get_payload(name)
    except ValueError:
        return get_tool(name)


def arm_work_cycle(robot: str | RobotSpec = "panda", seed: int = 0, payloads: tuple[str, ...] = ARM_CYCLE_PAYLOADS,
                   dwell: float = 1.0, carry_tilt: float = 0.6, transfers: bool = True) -> ArmCycle:
    """Picks and places, one catalogue payload per pick-and-place cycle, with contacts.

    The arm repeats :class:`~payload_estimator.sim.trajectories.PickAndPlace` (its carry tilts
    the wrist by ``carry_tilt``; the gripper dwells ``dwell`` s at the pick and at the place; the pick
    and the place are at most :data:`STATION_ARC_M` from home, so every arm carries its parts alike).
    The gripper closes on payload ``k`` a quarter into the ``k``-th pick's dwell and opens three
    quarters into the place's dwell; it is empty in between. Contacts (the same kinds as
    :func:`default_cycle`):

    * an 8 N horizontal push for 0.6 s on the first payload's far end, as the carry begins;
    * a 0.2 s, 5 N bump on the empty gripper's fingertips on the way home after the first place;
    * the third payload set down while still held: from the place dwell's start to the release
      a table bears 60-90 % of its weight (a persistent contact, which ends as a change or as a
      contact, never as a silently wrong mass).

    With ``transfers``, a grasp and a release take time, as on a real table: the table bears the part's
    weight at its bottom and gives it up over 0.2-0.7 s as the gripper closes and lifts (and, at the
    place, takes it back over as long before the gripper opens; not for the part set down while held).

    ``seed`` draws the directions, the table's share and the transfers' lengths.
    """
    from payload_estimator.robots import resolve_robot
    from payload_estimator.sim.stepper import WorkSchedule
    from payload_estimator.sim.trajectories import PickAndPlace

    if not payloads:
        raise ValueError("a work cycle needs at least one payload")
    rng = np.random.default_rng(seed)
    spec = resolve_robot(robot)
    one = PickAndPlace(spec, dwell=dwell, carry_tilt=carry_tilt, station_arc=STATION_ARC_M)
    period = one.cycle_duration
    duration = period * len(payloads)
    trajectory = PickAndPlace(spec, duration=duration, dwell=dwell, carry_tilt=carry_tilt, station_arc=STATION_ARC_M)
    (p0, p1), (q0, q1) = one.pick_dwell, one.place_dwell
    empty = InertialParameters.zero()
    changes: list[tuple[float, InertialParameters]] = []
    held: list[tuple[float, str]] = []
    contacts: list[Contact] = []
    moves: list[tuple[float, float]] = []
    tables: list[Contact] = []
    """The transfers' forces: physics, not contacts to flag."""
    timing = np.random.default_rng([seed, 1])  # apart from ``rng``: the other draws stay what they were
    for k, name in enumerate(payloads):
        payload = _catalogue(name)
        start = k * period
        grasp, release = round(start + p0 + 0.25 * (p1 - p0), 4), round(start + q0 + 0.75 * (q1 - q0), 4)
        changes += [(grasp, payload.params), (release, empty)]
        held += [(grasp, payload.name), (release, "empty")]
        grasp_s, release_s = (tuple(round(float(timing.uniform(0.2, 0.7)), 2) for _ in range(2)) if transfers
                              else (0.0, 0.0))
        release_s = 0.0 if k == 2 else release_s  # the third part is set down while held (a contact below)
        tables += transfer_contacts(payload, grasp, release, grasp_s, release_s, "lift-off")
        moves += [(grasp, grasp + grasp_s), (release - release_s, release)]
        if k == 0:
            a = rng.uniform(0.0, 2 * np.pi)
            contacts.append(Contact(round(start + p1 + 0.96, 4), 0.6, 8.0 * np.array([np.cos(a), np.sin(a), 0.0]),
                                    far_end(payload), "push"))
            d = rng.normal(size=3)
            contacts.append(Contact(round(start + q1 + 1.2, 4), 0.2, 5.0 * d / np.linalg.norm(d),
                                    EMPTY_GRIPPER_TIP_IN_SENSOR, "bump"))
        if k == 2:
            share = float(rng.uniform(0.6, 0.9))
            contacts.append(Contact(round(start + q0, 4), round(release - (start + q0), 4),
                                    np.array([0.0, 0.0, share * payload.mass * STANDARD_GRAVITY]),
                                    far_end(payload), "set down"))
    schedule = WorkSchedule(tuple(changes), tuple(contacts) + tuple(tables))
    return ArmCycle(trajectory, schedule, empty, tuple(held), tuple(contacts), duration, robot, tuple(payloads),
                    tuple(moves))
