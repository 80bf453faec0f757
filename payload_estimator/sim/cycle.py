"""Sensor-level work cycles: a wrist that picks and places payloads and meets contacts.

Ground truth for payload-change detection. One continuous wrist motion
(:class:`~payload_estimator.sim.wrist.WristTrajectory`, pinocchio RNEA, see
:mod:`payload_estimator.sim.wrist`) runs over the whole cycle while the held payload
changes from one :class:`Segment` to the next, and contacts (:class:`Contact`) push on
whatever the wrist holds.

Conventions
-----------
* **Time.** Samples at ``t = k / rate_hz``, ``k = 0 .. round(total * rate_hz) - 1``;
  segment ``i`` covers ``[t_changes[i-1], t_changes[i])`` (``t_changes``: the
  cumulative durations, without the last). The payload switches **instantaneously**:
  a sample on a switch time already carries the new payload. Times are compared
  with a tolerance of :data:`TIME_TOLERANCE_S`, so round-off in the cumulative sums
  never moves a sample on a boundary into the segment before it.
* **Continuity.** The trajectory's time scale of
  :func:`~payload_estimator.sim.wrist.simulate_wrist` is fitted to the window of
  each call (its mean angular speed is ``mean_ang_vel`` over that window), so
  windows simulated separately with ``t_start`` do **not** join up. The cycle is
  therefore simulated as one window ``[0, total)`` per distinct payload, and each
  segment takes its rows from its payload's run: kinematics are identical across
  payloads and continuous, the wrench jumps at a switch.
* **Zero payload** (:meth:`InertialParameters.zero`, an empty gripper whose own
  mass is tared): the wrench is exactly zero (plus offset and noise, if any). Only
  the payload contributes to the simulated wrench; the wrist links are massless.
* **Contacts.** A contact is an external force ``F`` (constant in the world frame)
  acting on the held payload (or on the empty gripper) at ``p`` (sensor frame).
  With the payload's balance ``f_sensor_on_payload + m g + F = m a``, the wrench
  the payload exerts **on the sensor** (the :class:`SensorSamples` convention) is
  ``m (g - a) + F``: the contact wrench is **added** to the reading,
  ``f_c = R_world_sensor.T @ F`` and ``tau_c = p x f_c`` (torque about the
  sensor origin, sensor frame). A downward push of ``F`` newtons on a payload at
  rest therefore reads like an extra mass of ``F / g``; a table supporting part of
  the weight from below reads like a lighter payload. The contact is a disturbance:
  the truth (:meth:`CycleRun.truth_at`) stays the held payload's parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import NoiseLevel
from payload_estimator.core.samples import STANDARD_GRAVITY, SensorSamples
from payload_estimator.outputs.plots import save_figure
from payload_estimator.sim.payloads import Payload, get_payload
from payload_estimator.sim.workshop import get_tool
from payload_estimator.sim.wrist import WristTrajectory, sensor_rotations, simulate_wrist

if TYPE_CHECKING:  # the MuJoCo simulation is imported when a cycle is built, not with this module
    pass

__all__ = [
    "Segment",
    "Contact",
    "CycleRun",
    "simulate_cycle",
    "default_cycle",
    "plot_cycle",
    "TRANSFER_KINDS",
    "transfer_contacts",
    "transfer_cycle",
    "far_end",
    "EMPTY_GRIPPER_TIP_IN_SENSOR",
    "TIME_TOLERANCE_S",
    "CYCLE_TRAJECTORY",
]

TIME_TOLERANCE_S = 1e-9
"""A time within this of a switch or of a contact's end points counts as on it, s."""

CYCLE_TRAJECTORY = WristTrajectory(mean_ang_vel=0.6)
"""The default wrist motion of a cycle: 0.6 rad/s mean angular speed."""


def _vector3(x: np.ndarray, name: str) -> np.ndarray:
    v = np.array(x, dtype=float).reshape(-1)
    if v.shape != (3,):
        raise ValueError(f"{name} must have 3 entries, got {v.shape}")
    v.setflags(write=False)
    return v


@dataclass(frozen=True, eq=False)
class Segment:
    """The wrist holds ``payload`` (sensor frame) for ``duration`` seconds.

    ``InertialParameters.zero()`` is an empty gripper.
    """

    payload: InertialParameters
    duration: float
    name: str = ""

    def __post_init__(self) -> None:
        if not self.duration > 0.0:
            raise ValueError(f"segment {self.name!r}: duration must be positive, got {self.duration}")

    @property
    def is_empty(self) -> bool:
        """True for an empty gripper (zero mass)."""
        return self.payload.mass == 0.0


PROFILES = ("constant", "fading", "growing")
"""How a contact's force runs over its span: constant; fading from full to nothing (a table that carries
a part as the gripper lifts it off, the load transferring to the gripper); growing from nothing to full
(a table taking the load back as the part is set down, before the gripper opens). Both along a
smoothstep."""


@dataclass(frozen=True, eq=False)
class Contact:
    """An external force on the held payload, active on ``[t_start, t_start + duration)``.

    Attributes:
        t_start: s, on the cycle's clock.
        duration: s.
        force_in_world: (3,) N, the force **on the payload** at full strength, constant in the world
            frame (z up: ``[0, 0, -F]`` pushes down).
        point_in_sensor: (3,) m, where it acts, sensor frame.
        name: a label.
        profile: how its strength runs over the span (:data:`PROFILES`).
    """

    t_start: float
    duration: float
    force_in_world: np.ndarray
    point_in_sensor: np.ndarray
    name: str = ""
    profile: str = "constant"

    def __post_init__(self) -> None:
        if not self.duration > 0.0:
            raise ValueError(f"contact {self.name!r}: duration must be positive, got {self.duration}")
        if self.profile not in PROFILES:
            raise ValueError(f"contact {self.name!r}: profile must be one of {', '.join(PROFILES)}")
        object.__setattr__(self, "force_in_world", _vector3(self.force_in_world, "force_in_world"))
        object.__setattr__(self, "point_in_sensor", _vector3(self.point_in_sensor, "point_in_sensor"))

    @property
    def t_end(self) -> float:
        """End of the contact (excluded), s."""
        return self.t_start + self.duration

    def active(self, t: np.ndarray) -> np.ndarray:
        """Boolean array: True where ``t_start <= t < t_end`` (within :data:`TIME_TOLERANCE_S`)."""
        t = np.asarray(t, dtype=float)
        return (t >= self.t_start - TIME_TOLERANCE_S) & (t < self.t_end - TIME_TOLERANCE_S)

    def strength(self, t: np.ndarray) -> np.ndarray:
        """(N,) the share of the full force at times ``t`` inside the span (:attr:`profile`)."""
        if self.profile == "constant":
            return np.ones(np.shape(t))
        u = np.clip((np.asarray(t, dtype=float) - self.t_start) / self.duration, 0.0, 1.0)
        rising = u * u * (3.0 - 2.0 * u)
        return rising if self.profile == "growing" else 1.0 - rising

    def wrench_in_sensor(self, R_world_sensor: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
        """Return (N, 6) ``[f, p x f]`` with ``f = R.T @ force_in_world``: what the contact adds to the reading.

        At the sensor's orientations ``R_world_sensor`` (N, 3, 3), whether active or not; with the
        times ``t``, scaled by the contact's :meth:`strength` there."""
        f = np.einsum("nji,j->ni", np.asarray(R_world_sensor, dtype=float), self.force_in_world)
        if t is not None:
            f = f * self.strength(t)[:, None]
        return np.hstack([f, np.cross(self.point_in_sensor, f)])


@dataclass(frozen=True, eq=False)
class CycleRun:
    """A simulated work cycle and its ground truth over time.

    Attributes:
        samples: measured samples (noise and offset added; ``exact`` when there is neither).
        exact: noise-free samples, contacts included.
        t_changes: (len(segments) - 1,) switch times, s (every segment boundary, even one
            between two segments holding the same payload).
        segments, contacts: what was simulated.
        rotation_world_sensor: (N, 3, 3) orientation of the sensor at each sample.
        contact_wrench_in_sensor: (N, 6) the part of ``exact.wrench_in_sensor`` due to contacts.
    """

    samples: SensorSamples
    exact: SensorSamples
    t_changes: np.ndarray
    segments: tuple[Segment, ...]
    contacts: tuple[Contact, ...]
    rotation_world_sensor: np.ndarray = field(repr=False)
    contact_wrench_in_sensor: np.ndarray = field(repr=False)

    @property
    def duration(self) -> float:
        """Total length of the cycle, s."""
        return float(sum(s.duration for s in self.segments))

    def segment_index(self, t: np.ndarray | float) -> np.ndarray:
        """Index of the segment held at each time (clipped to the first/last segment)."""
        return _segment_index(self.t_changes, t)

    def truth_at(self, t: float) -> InertialParameters:
        """Inertial parameters held at time ``t`` (contacts do not change them)."""
        return self.segments[int(self.segment_index(float(t)))].payload

    def phi_at(self, t: np.ndarray) -> np.ndarray:
        """(N, 10) true ``phi`` at each time."""
        phis = np.array([s.payload.phi for s in self.segments])
        return phis[self.segment_index(np.atleast_1d(t))]

    def mass_at(self, t: np.ndarray) -> np.ndarray:
        """(N,) true mass at each time, kg (0 for an empty gripper)."""
        return self.phi_at(t)[:, 0]

    def com_at(self, t: np.ndarray) -> np.ndarray:
        """(N, 3) true COM at each time, sensor frame, m (NaN for an empty gripper)."""
        phi = self.phi_at(t)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(phi[:, :1] > 0.0, phi[:, 1:4] / phi[:, :1], np.nan)

    def contact_mask(self, t: np.ndarray) -> np.ndarray:
        """(N,) True where any contact is active."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        mask = np.zeros(t.shape, dtype=bool)
        for c in self.contacts:
            mask |= c.active(t)
        return mask

    def in_contact(self, t: float) -> bool:
        """True when a contact is active at time ``t``."""
        return bool(self.contact_mask(np.array([float(t)]))[0])


def _segment_index(t_changes: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    return np.searchsorted(np.asarray(t_changes) - TIME_TOLERANCE_S, t, side="right")


def simulate_cycle(
    segments: list[Segment] | tuple[Segment, ...],
    contacts: list[Contact] | tuple[Contact, ...] = (),
    trajectory: WristTrajectory = CYCLE_TRAJECTORY,
    rate_hz: float = 100.0,
    noise: NoiseLevel | None = None,
    ft_bias: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> CycleRun:
    """Simulate the wrist over the whole cycle; see the module docstring for the conventions.

    Args:
        segments: what is held, in order (at least one).
        contacts: external forces on the held payload; times on the cycle's clock.
        trajectory: one continuous wrist motion over ``[0, total)``; ``mean_ang_vel`` is its
            mean angular speed over the whole cycle.
        rate_hz: sampling rate.
        noise: Table II level added to linear/angular acceleration and wrench, as
            :func:`simulate_wrist` does (None: exact).
        ft_bias: (6,) constant F/T offset added to the measured wrench.
        rng: random generator for the noise.
    """
    segments = tuple(segments)
    contacts = tuple(contacts)
    if not segments:
        raise ValueError("a cycle needs at least one segment")
    ends = np.cumsum([s.duration for s in segments])
    total = float(ends[-1])
    t_changes = ends[:-1]

    # One run over the whole cycle per distinct payload: same trajectory window, so same motion.
    runs: dict[bytes, SensorSamples] = {}
    for seg in segments:
        key = seg.payload.phi.tobytes()
        if key not in runs:
            runs[key] = simulate_wrist(seg.payload, trajectory, duration=total, rate_hz=rate_hz)[1]
    first = next(iter(runs.values()))
    t = first.t
    index = _segment_index(t_changes, t)
    wrench = np.zeros((len(t), 6))
    for i, seg in enumerate(segments):
        rows = index == i
        wrench[rows] = runs[seg.payload.phi.tobytes()].wrench_in_sensor[rows]

    R = sensor_rotations(trajectory, duration=total, rate_hz=rate_hz)
    contact_wrench = np.zeros_like(wrench)
    for c in contacts:
        rows = c.active(t)
        contact_wrench[rows] += c.wrench_in_sensor(R[rows], t[rows])
    wrench = wrench + contact_wrench

    exact = SensorSamples(
        t, first.lin_acc_in_sensor, first.ang_vel_in_sensor, first.ang_acc_in_sensor, first.gravity_in_sensor, wrench
    )
    samples = exact if noise is None and ft_bias is None else _measure(exact, noise, ft_bias, rng)
    return CycleRun(samples, exact, t_changes, segments, contacts, R, contact_wrench)


def _measure(
    exact: SensorSamples, noise: NoiseLevel | None, ft_bias: np.ndarray | None, rng: np.random.Generator | None
) -> SensorSamples:
    """Noise and offset added as :func:`simulate_wrist` adds them."""
    rng = np.random.default_rng() if rng is None else rng
    noise = noise or NoiseLevel("none", 0, 0, 0, 0)
    n = len(exact)
    wrench = exact.wrench_in_sensor + np.concatenate(
        [rng.normal(0, noise.force, (n, 3)), rng.normal(0, noise.torque, (n, 3))], axis=1
    )
    if ft_bias is not None:
        wrench = wrench + np.asarray(ft_bias, dtype=float)
    return SensorSamples(
        exact.t,
        exact.lin_acc_in_sensor + rng.normal(0, noise.lin_acc, (n, 3)),
        exact.ang_vel_in_sensor,
        exact.ang_acc_in_sensor + rng.normal(0, noise.ang_acc, (n, 3)),
        exact.gravity_in_sensor,
        wrench,
    )


# ----------------------------------------------------------------------------- the default cycle

EMPTY_GRIPPER_TIP_IN_SENSOR = np.array([0.0, 0.0, 0.12])
"""Where a bump meets the empty gripper: its fingertips, 12 cm out along the sensor's z, m."""


def far_end(payload: Payload) -> np.ndarray:
    """Return the centre of the envelope's face farthest out along the sensor's z, m.

    The object's bottom when it hangs from the gripper."""
    lo, hi = payload.envelope.bounds()
    return np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), hi[2]])


def default_cycle(seed: int = 0) -> tuple[tuple[Segment, ...], tuple[Contact, ...]]:
    """A pick-and-place cycle of 7 segments (35-58 s) and 3 contacts.

    Empty gripper, the ``hammer`` configuration of Nadeau et al.'s modular test object (316 g),
    empty, the workshop ruler (68 g), empty,
    the cordless ``drill`` (1.55 kg), empty; durations drawn in 4-10 s (0.1 s steps). Contacts:
    an 8 N horizontal push for 0.6 s on the held hammer's far end; a 0.2 s, 5 N bump on the
    empty gripper's fingertips; the drill set down on a table while still held, the table
    bearing 60-90 % of its weight for 2-3 s, ending 0.5 s before the release. ``seed`` draws
    the durations, times, directions and the table's share; the same seed gives the same cycle.
    """
    rng = np.random.default_rng(seed)
    empty = InertialParameters.zero()
    hammer, ruler, drill = get_payload("hammer"), get_tool("ws_ruler"), get_payload("drill")
    plan: list[tuple[str, InertialParameters]] = [
        ("empty", empty),
        (hammer.name, hammer.params),
        ("empty", empty),
        (ruler.name, ruler.params),
        ("empty", empty),
        (drill.name, drill.params),
        ("empty", empty),
    ]

    def draw_duration(lo: float, hi: float) -> float:
        return round(float(rng.uniform(lo, hi)), 1)

    # Held segments are long enough for their contacts; empty ones 4-7 s.
    durations = [draw_duration(6.0, 10.0) if name != "empty" else draw_duration(4.0, 7.0) for name, _ in plan]
    segments = tuple(Segment(p, d, name) for (name, p), d in zip(plan, durations))
    starts = np.concatenate([[0.0], np.cumsum(durations)[:-1]])

    # The push, during the hammer's segment, well inside it.
    a = rng.uniform(0.0, 2 * np.pi)
    t_push = round(float(starts[1] + rng.uniform(1.5, durations[1] - 2.1)), 2)
    push = Contact(t_push, 0.6, 8.0 * np.array([np.cos(a), np.sin(a), 0.0]), far_end(hammer), "push")

    # The bump, on the empty gripper between the ruler and the drill.
    d = rng.normal(size=3)
    t_bump = round(float(starts[4] + rng.uniform(1.0, durations[4] - 1.2)), 2)
    bump = Contact(t_bump, 0.2, 5.0 * d / np.linalg.norm(d), EMPTY_GRIPPER_TIP_IN_SENSOR, "bump")

    # The drill set down on a table while still held: the table pushes up on its bottom.
    share = float(rng.uniform(0.6, 0.9))
    held = round(float(rng.uniform(2.0, 3.0)), 1)
    t_down = round(float(starts[5] + durations[5] - 0.5 - held), 2)
    table = Contact(t_down, held, np.array([0.0, 0.0, share * drill.mass * STANDARD_GRAVITY]), far_end(drill),
                    "set down")
    return segments, (push, bump, table)


TRANSFER_KINDS = ("step", "closing", "lift-off")
"""How a load moves over to the gripper (and back): at once; a gripper closing (the load's share grows
at its COM); a part lifted off a table that bears the rest of its weight at its bottom meanwhile (and,
when it is set down, takes it back before the gripper opens)."""


def transfer_contacts(payload: Payload, t_grasp: float, t_release: float, grasp_s: float, release_s: float,
                      kind: str) -> tuple[Contact, ...]:
    """Contacts that make a grasp at ``t_grasp`` and a release at ``t_release`` (s) take time.

    The simulated payload switches at once at ``t_grasp`` and ``t_release``; a table (or the gripper's
    fingers, ``closing``) then bears the part's weight, fading over ``grasp_s`` s after the grasp and
    growing over ``release_s`` s before the release (:data:`TRANSFER_KINDS`). The load is the gripper's
    only once a grasp's transfer has ended, and until a release's begins."""
    if kind not in TRANSFER_KINDS:
        raise ValueError(f"kind must be one of {', '.join(TRANSFER_KINDS)}, got {kind!r}")
    if kind == "step":
        return ()
    point = np.asarray(payload.params.com if kind == "closing" else far_end(payload), dtype=float)
    up = np.array([0.0, 0.0, payload.mass * STANDARD_GRAVITY])
    out = []
    if grasp_s > 0.0:
        out.append(Contact(t_grasp, grasp_s, up, point, f"{kind} grasp", "fading"))
    if release_s > 0.0:
        out.append(Contact(t_release - release_s, release_s, up, point, f"{kind} release", "growing"))
    return tuple(out)


def transfer_cycle(seed: int = 0, kinds: tuple[str, ...] = TRANSFER_KINDS,
                   payloads: tuple[str, ...] = ("drill", "claw_hammer", "hammer")
                   ) -> tuple[tuple[Segment, ...], tuple[Contact, ...], np.ndarray, np.ndarray]:
    """Picks and places whose loads transfer over 0 to 1 s: ``(segments, contacts, starts, ends)``.

    An empty gripper picks each payload in turn (held 6-9 s, empty 4-6 s in between), each grasp and
    each release of the kind ``kinds`` holds in turn (:func:`transfer_contacts`), its transfer lasting
    0 to 1 s (0.05 s steps, drawn from ``seed``; a step takes none). ``starts`` and ``ends`` (s) are
    where each transfer begins and ends: from its end on the sensor reads the new payload alone."""
    rng = np.random.default_rng(seed)
    empty = InertialParameters.zero()
    segments: list[Segment] = [Segment(empty, round(float(rng.uniform(4.0, 6.0)), 1), "empty")]
    contacts: list[Contact] = []
    starts: list[float] = []
    ends: list[float] = []
    t = segments[0].duration
    for k, name in enumerate(payloads):
        payload = get_payload(name)
        kind = kinds[k % len(kinds)]
        held = round(float(rng.uniform(6.0, 9.0)), 1)
        grasp_s, release_s = (0.0, 0.0) if kind == "step" else tuple(round(float(rng.uniform(0.0, 1.0)) / 0.05) * 0.05
                                                                       for _ in range(2))
        contacts += transfer_contacts(payload, t, t + held, grasp_s, release_s, kind)
        starts += [t, t + held - release_s]
        ends += [t + grasp_s, t + held]
        segments += [Segment(payload.params, held, payload.name),
                     Segment(empty, round(float(rng.uniform(4.0, 6.0)), 1), "empty")]
        t += held + segments[-1].duration
    return tuple(segments), tuple(contacts), np.array(starts), np.array(ends)


# ----------------------------------------------------------------------------- plot


def plot_cycle(
    run: CycleRun,
    path: str | Path,
    estimates: tuple[np.ndarray, np.ndarray] | None = None,
    title: str = "",
) -> Path:
    """Write a PNG of the true mass over time and the static-equivalent mass of the measured force.

    Contacts are shaded, switches dashed; the static-equivalent mass is ``f . g / |g|²``.
    ``estimates``: optional ``(t, mass)`` arrays drawn on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = run.samples
    t = s.t
    g = s.gravity_in_sensor
    apparent = np.einsum("ij,ij->i", s.wrench_in_sensor[:, :3], g) / np.einsum("ij,ij->i", g, g)
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(t, apparent, color="0.7", lw=0.6, label="force along g / g")
    ax.plot(t, run.mass_at(t), color="k", lw=1.5, label="true mass")
    if estimates is not None:
        ax.plot(estimates[0], estimates[1], color="tab:blue", lw=1.2, label="estimate")
    for tc in run.t_changes:
        ax.axvline(tc, color="tab:red", ls="--", lw=0.8)
    for c in run.contacts:
        ax.axvspan(c.t_start, c.t_end, color="tab:orange", alpha=0.25)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("mass [kg]")
    ax.legend(loc="upper left", fontsize=8)
    if title:
        ax.set_title(title)
    return save_figure(fig, path)
