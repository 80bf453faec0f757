"""A work cycle scored against its ground truth: changes caught, contacts held out, errors after.

Used by ``payload-estimator demo --scenario cycle`` and ``benchmarks/tracking.py``. Inputs are
plain arrays: the true switch times and what is held from each one on, the contacts' spans, the
tracker's events (:class:`~payload_estimator.core.tracking.TrackEvent`) and the estimate over
time. Conventions: times in s on one clock, masses in kg, COM in the sensor frame in m (errors
reported in mm), parameters in the order of :class:`~payload_estimator.core.inertia.InertialParameters`.

Matching rules (stated once here):

* A switch is **caught** by the first change whose start lies within :data:`MATCH_BEFORE_S`
  before and :data:`MATCH_AFTER_S` after it; the **delay** is from the switch to the change's
  decision.
* A change matched to no switch is **false**, unless it began during a contact (from the
  contact's start to :data:`MATCH_AFTER_S` after its end): a persistent contact that ends as a
  change is flagged by design (the object set down while held), and counted apart.
* A contact event that overlaps no true contact and begins no closer than :data:`MATCH_AFTER_S`
  to a switch is a **false contact** (samples held out for nothing; the estimate is untouched).
* A contact is **flagged** when an event (contact or change) overlaps it; its **mass error** is
  the largest relative error of the mass estimate from its start to 0.5 s after its end (for a
  contact that no change answered, on a held payload). What the contact itself did to the
  estimate is the difference from the same run without it (``benchmarks/tracking.py``).
* Errors ``after`` s past a switch: the estimate at the first estimate time at or after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from payload_estimator.core.tracking import CHANGE, CONTACT, TrackEvent

__all__ = ["SwitchScore", "ContactScore", "CycleScore", "score_cycle", "plot_work_cycle", "MATCH_BEFORE_S",
           "MATCH_AFTER_S", "ERROR_TIMES_S"]

MATCH_BEFORE_S = 0.1
MATCH_AFTER_S = 1.0
ERROR_TIMES_S = (1.0, 1.5, 3.0)
"""Seconds after a switch at which the errors are read; the mass is judged from 1.5 s on, the COM at 3 s."""


@dataclass(frozen=True)
class SwitchScore:
    """One true switch: what is held from ``t`` on, whether and how fast it was caught, and the errors after it.

    ``mass_error``: relative for a payload, in kg for an empty gripper; ``com_error_mm``: NaN
    for an empty gripper. Both are keyed by the seconds after the switch (:data:`ERROR_TIMES_S`)."""

    t: float
    held: str
    mass: float
    delay: float | None
    mass_error: dict[float, float] = field(default_factory=dict)
    com_error_mm: dict[float, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ContactScore:
    """One true contact and how the tracker took it.

    ``outcome``: "contact" (held out), "change" (ended as a change) or "missed";
    ``mass_error``: relative (NaN when a change answered it or nothing was held)."""

    name: str
    t_start: float
    t_end: float
    outcome: str
    mass_error: float


@dataclass(frozen=True)
class CycleScore:
    """A scored work cycle (module docstring for the rules).

    Attributes:
        switches: one score per true switch.
        contacts: one score per true contact.
        false_changes: changes that match no switch and began during no contact.
        changes_from_contacts: changes that began during a contact (flagged by design).
        false_contacts: contact events that overlap no true contact and begin near no switch.
    """

    switches: tuple[SwitchScore, ...]
    contacts: tuple[ContactScore, ...]
    false_changes: tuple[TrackEvent, ...]
    changes_from_contacts: int
    false_contacts: tuple[TrackEvent, ...] = ()

    @property
    def missed(self) -> int:
        """Number of switches no change caught."""
        return sum(s.delay is None for s in self.switches)

    @property
    def delays(self) -> np.ndarray:
        """(k,) delays of the caught switches, from the switch to the change's decision, s."""
        return np.array([s.delay for s in self.switches if s.delay is not None])

    def summary(self) -> dict:
        """Plain values for JSON."""
        return {
            "switches": [{"t": s.t, "held": s.held, "mass": s.mass, "delay_s": s.delay,
                          "mass_error": {str(k): v for k, v in s.mass_error.items()},
                          "com_error_mm": {str(k): _finite_or_none(v) for k, v in s.com_error_mm.items()}}
                         for s in self.switches],
            "contacts": [{"name": c.name, "t_start": c.t_start, "t_end": c.t_end, "outcome": c.outcome,
                          "mass_error": _finite_or_none(c.mass_error)} for c in self.contacts],
            "missed": self.missed,
            "false_changes": len(self.false_changes),
            "false_contacts": len(self.false_contacts),
            "changes_from_contacts": self.changes_from_contacts,
        }


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def score_cycle(
    switch_t: Sequence[float] | np.ndarray,
    held: Sequence[str],
    phi_after: Sequence[np.ndarray] | np.ndarray,
    contacts: Sequence[tuple[str, float, float]],
    events: Sequence[TrackEvent],
    t: np.ndarray,
    mass: np.ndarray,
    com: np.ndarray,
    mass_before: float | None = None,
    transfer_start_t: Sequence[float] | np.ndarray | None = None,
) -> CycleScore:
    """Score a tracked run (module docstring for the rules).

    Args:
        switch_t: (K,) true switch times, s.
        held: (K,) names of what is held from each on.
        phi_after: (K, 10) true parameters from each switch on (zero mass: empty).
        contacts: ``(name, t_start, t_end)`` of each true contact.
        events: the tracker's events.
        t: (N,) times of the estimates, s.
        mass: (N,) estimated mass, kg.
        com: (N, 3) estimated COM in the sensor frame, m.
        mass_before: true mass before the first switch (for a contact before it).
        transfer_start_t: (K,) where each switch's load began to transfer, s (a switch is then where it
            ended; a change flagged from its beginning on matches it); None: switches are instantaneous.
    """
    t = np.asarray(t, dtype=float)
    changes = [e for e in events if e.kind == CHANGE]
    used: set[int] = set()
    switches = []
    begins = switch_t if transfer_start_t is None else transfer_start_t
    for ts, t_begin, name, phi in zip(switch_t, begins, held, phi_after):
        hit = [i for i, e in enumerate(changes)
               if t_begin - MATCH_BEFORE_S <= e.t_start <= ts + MATCH_AFTER_S and i not in used]
        delay = None
        if hit:
            used.add(hit[0])
            delay = float(changes[hit[0]].t_decided - ts)
        m_true = float(phi[0])
        m_err, c_err = {}, {}
        for after in ERROR_TIMES_S:
            k = min(int(np.searchsorted(t, ts + after)), len(t) - 1)
            if m_true > 0.0:
                m_err[after] = float(mass[k] / m_true - 1.0)
                c_err[after] = 1e3 * float(np.linalg.norm(com[k] - np.asarray(phi[1:4]) / m_true))
            else:
                m_err[after] = float(mass[k])
                c_err[after] = float("nan")
        switches.append(SwitchScore(float(ts), str(name), m_true, delay, m_err, c_err))
    from_contacts, false = 0, []
    for i, e in enumerate(changes):
        if i in used:
            continue
        if any(c0 - MATCH_BEFORE_S <= e.t_start <= c1 + MATCH_AFTER_S for _, c0, c1 in contacts):
            from_contacts += 1
        else:
            false.append(e)
    masses_true = [mass_before if mass_before is not None else float("nan")] + [float(p[0]) for p in phi_after]
    scored = []
    for name, c0, c1 in contacts:
        overlapping = [e for e in events if e.kind in (CHANGE, CONTACT) and e.t_start <= c1 and e.t_decided >= c0]
        answered_by_change = any(e.kind == CHANGE and c0 - MATCH_BEFORE_S <= e.t_start <= c1 for e in overlapping)
        outcome = "change" if answered_by_change else ("contact" if overlapping else "missed")
        held_mass = masses_true[int(np.searchsorted(np.asarray(switch_t), c0, side="right"))]
        error = float("nan")
        if outcome != "change" and held_mass > 0.0 and len(t):
            window = (t >= c0) & (t <= c1 + 0.5)
            if window.any():
                error = float(np.max(np.abs(mass[window] - held_mass))) / held_mass
        scored.append(ContactScore(str(name), float(c0), float(c1), outcome, error))
    false_contacts = tuple(
        e for e in events if e.kind == CONTACT
        and not any(e.t_start <= c1 + MATCH_AFTER_S and e.t_decided >= c0 - MATCH_BEFORE_S for _, c0, c1 in contacts)
        and not any(abs(e.t_start - ts) <= MATCH_AFTER_S for ts in switch_t))
    return CycleScore(tuple(switches), tuple(scored), tuple(false), from_contacts, false_contacts)


def plot_work_cycle(
    path: str | Path,
    t_truth: np.ndarray,
    mass_truth: np.ndarray,
    t: np.ndarray,
    mass: np.ndarray,
    com_error_mm: np.ndarray,
    events: Sequence[TrackEvent],
    contacts: Sequence[tuple[str, float, float]],
    title: str = "",
) -> Path:
    """Plot a work cycle in two panels over time: true and estimated mass, and the COM error (mm).

    True contacts are shaded, detected changes drawn as red lines (dashed at their start, solid
    when decided), detected contacts as orange ticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from payload_estimator.outputs.plots import save_figure

    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(11, 6), sharex=True, height_ratios=(2, 1))
    ax.plot(t_truth, mass_truth, color="k", lw=1.5, label="truth")
    ax.plot(t, mass, color="tab:blue", lw=1.1, label="estimate")
    ax2.plot(t, com_error_mm, color="tab:green", lw=1.0, label="COM error")
    for a in (ax, ax2):
        for _, c0, c1 in contacts:
            a.axvspan(c0, c1, color="tab:orange", alpha=0.2)
        for e in events:
            if e.kind == CHANGE:
                a.axvline(e.t_decided, color="tab:red", lw=0.9)
    for e in events:
        if e.kind == CONTACT:
            ax.plot([e.t_start, e.t_decided], [0.0, 0.0], color="tab:orange", lw=4, solid_capstyle="butt")
    ax.plot([], [], color="tab:red", lw=0.9, label="change detected")
    ax.plot([], [], color="tab:orange", lw=4, label="contact held out")
    ax.fill_between([], [], color="tab:orange", alpha=0.2, label="true contact")
    ax.set_ylabel("mass [kg]")
    ax.legend(loc="upper left", fontsize=8, ncol=3)
    ax2.set_ylabel("COM error [mm]")
    ax2.set_ylim(0.0, 50.0)
    ax2.set_xlabel("time [s]")
    if title:
        ax.set_title(title)
    return save_figure(fig, path)
