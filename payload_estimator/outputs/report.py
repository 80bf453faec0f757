"""Human-readable reports of estimates (rich tables) for the command line."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.table import Table

from payload_estimator.core.estimators.rating import no_payload_text
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.results import FROM_PRIOR, IDENTIFIED, NOT_APPLICABLE, NOT_IDENTIFIED, Estimate

__all__ = ["estimate_table", "quality_table", "next_steps", "convergence_hint", "excitation_table",
           "calibration_motion_table"]

MOVE_MORE = ("move the payload through more orientations and faster (payload-estimator excite designs such "
             "a motion)")
"""What to do when the data do not determine a quantity."""
ESTIMATORS_WITH_PRIOR = frozenset({"pmd", "pmd-divide"})
"""The estimators that keep their estimate physically consistent (the payload's shape as prior)."""


def _vec(v: np.ndarray, scale: float = 1.0, digits: int = 4, sign: bool = True) -> str:
    return "[" + ", ".join(f"{x * scale:{'+' if sign else ''}.{digits}f}" for x in v) + "]"


def estimate_table(estimate: Estimate, truth: InertialParameters | None = None, frame: str = "sensor") -> Table:
    """Mass, COM and inertia about the COM of an estimate (± one standard deviation), beside the truth if known."""
    table = Table(title=f"Payload estimate ({estimate.estimator}, frame '{frame}')")
    table.add_column("quantity", no_wrap=True)
    if truth is not None:
        table.add_column("truth", justify="right", no_wrap=True)
    table.add_column("estimate", justify="right", no_wrap=True)
    table.add_column("± 1 std", justify="right", no_wrap=True)
    std_known = estimate.covariance is not None

    def row(name: str, true: float | None, est: float, std: float | None, fmt: str, status: str) -> None:
        cells = [name]
        if truth is not None:
            cells.append(format(true, fmt) if true is not None else "")
        if status == NOT_IDENTIFIED:  # the number would mean nothing: say so
            cells += ["not identified", ""]
        elif status == NOT_APPLICABLE:  # no payload: no COM, no inertia
            cells += ["n/a (no payload)", ""]
        elif not np.isfinite(est):  # a COM m c / m with no mass: there is none to show
            cells += ["none (no mass)", ""]
        else:
            cells += [format(est, fmt) + (" (from shape)" if status == FROM_PRIOR else ""),
                      format(std, fmt.lstrip("+")) if std is not None and std_known else ""]
        table.add_row(*cells)

    ident = estimate.identification
    row("mass (kg)" + (", no payload" if ident.empty else ""), truth.mass if truth else None, estimate.mass,
        estimate.mass_std, ".4f", ident.mass)
    for i, axis in enumerate("xyz"):
        row(f"COM {axis} (mm)", 1e3 * truth.com[i] if truth else None, 1e3 * estimate.com[i],
            1e3 * estimate.com_std[i], "+.1f", ident.com[i])
    I_est = estimate.inertia_com
    I_std = estimate.inertia_com_std
    I_true = truth.inertia_com if truth else None
    for k, ((i, j), name) in enumerate(zip(((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)),
                                           ("xx", "yy", "zz", "xy", "xz", "yz"))):
        row(f"I{name} about COM (kg m²)", I_true[i, j] if I_true is not None else None, I_est[i, j], I_std[k],
            "+.3e", ident.inertia)
    return table


def _names(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _quantities(estimate: Estimate, status: str) -> list[str]:
    """The quantities of ``estimate`` whose identification is ``status``: mass, COM (or its axes), inertia."""
    ident = estimate.identification
    out = ["mass"] if ident.mass == status else []
    axes = [axis for axis, c in zip("xyz", ident.com) if c == status]
    if axes:
        out.append("COM" if len(axes) == 3 else "COM " + "/".join(axes))
    if ident.inertia == status:
        out.append("inertia")
    return out


def quality_table(estimate: Estimate, verbose: bool = False) -> Table:
    """Samples, conditioning, residuals, what the data determine, model fit and consistency of an estimate.

    ``verbose`` adds the figures behind the model fit (persistence, excess) and the mean dynamism
    (docs/trust.md explains them)."""
    table = Table(title="Quality", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("samples used", str(estimate.samples_used))
    if verbose:
        table.add_row("mean dynamism", f"{estimate.dynamism:.3g}")
    table.add_row("condition number (scaled)", f"{estimate.condition_number:.3g}")
    r = estimate.residual_rms
    table.add_row("residual RMS force (N)", _vec(r[:3], 1.0, 3, sign=False))
    table.add_row("residual RMS torque (N m)", _vec(r[3:], 1.0, 4, sign=False))
    if estimate.bias is not None:
        table.add_row("F/T offset force (N)", _vec(estimate.bias[:3], 1.0, 3))
        table.add_row("F/T offset torque (N m)", _vec(estimate.bias[3:], 1.0, 4))
    ident = estimate.identification
    if ident.empty:
        table.add_row("payload", f"none: the gripper is empty ({no_payload_text(estimate)})")
    else:
        determined = _quantities(estimate, IDENTIFIED)
        table.add_row("determined by the data", _names(determined) if determined else "nothing")
        from_shape = _quantities(estimate, FROM_PRIOR)
        if from_shape:
            table.add_row("from the payload's shape", _names(from_shape))
        missing = _quantities(estimate, NOT_IDENTIFIED)
        table.add_row("not determined", _names(missing) if missing else "none")
    fit = estimate.model_fit
    label = {"good": "good", "poor": "POOR", "unknown": "unknown (too few samples to tell)"}[fit.label]
    if verbose and fit.checked:
        excess = f", excess {fit.excess:.1f}" if np.isfinite(fit.excess) else ""
        label += f" (persistence {fit.persistence:.1f}{excess})"
    table.add_row("model fit", label)
    table.add_row("physically consistent", "not applicable (no payload)" if ident.empty
                  else "yes" if estimate.physically_consistent else "NO")
    return table


def next_steps(estimate: Estimate, shape_option: str = "--shape") -> list[str]:
    """One line per problem of ``estimate`` the quality table shows, each saying what the user can do.

    A quantity the data do not determine, a physically inconsistent estimate (``what to do: ...``), an
    inertia that comes from the shape only (``note: ...``); ``shape_option``: how the command takes the
    payload's shape ("" when it knows it). Empty when there is nothing to do (or no payload)."""
    ident = estimate.identification
    if ident.empty:
        return []
    shape = f" ({shape_option})" if shape_option else ""
    lines = []
    missing = _quantities(estimate, NOT_IDENTIFIED)
    if missing:
        lines.append(f"what to do: the data do not determine the {_names(missing)}: {MOVE_MORE}"
                     + (f"; or give the payload's shape{shape} to the default estimator, pmd, which takes "
                        "the inertia from it" if missing == ["inertia"] else ""))
    if not estimate.physically_consistent:
        if estimate.estimator not in ESTIMATORS_WITH_PRIOR:
            lines.append(f"what to do: the estimate is not physically consistent ({estimate.estimator} does not "
                         f"enforce it): use the default estimator, pmd, with the payload's shape{shape}, "
                         "which keeps it consistent" + ("" if missing else f"; or {MOVE_MORE}"))
        else:
            lines.append(f"what to do: the estimate is not physically consistent: check that the shape "
                         f"given{shape} holds the whole payload, and {MOVE_MORE}")
    from_shape = _quantities(estimate, FROM_PRIOR)
    if from_shape:
        lines.append(f"note: the {_names(from_shape)} comes from the payload's shape (uniform density), not from "
                     f"the data; to measure it, {MOVE_MORE}")
    return lines


def convergence_hint(reason: str) -> str:
    """What to do about an estimate that has not converged for ``reason`` (the convergence monitor's).

    A clause to append to the reason; "" when the reason says it already (a poor fit's cause, a quantity
    not identified)."""
    if reason.startswith(("model fit poor", "not identified", "converged")) or "(move" in reason:
        return ""
    if reason == "not physically consistent":
        return "; see 'what to do' above"
    return "; a longer recording, or more motion, lets it settle"


def _predicted_cells(predicted: dict[str, Any] | None) -> list[str]:
    """Mass, COM and inertia standard deviations of an excitation summary's prediction."""
    if predicted is None:
        return ["", "", ""]
    return [f"{100 * predicted['mass_rel_std']:.2f} %",
            f"{1e3 * max(predicted['com_std_m']):.2f} mm",
            f"{100 * max(predicted['inertia_rel_std']):.1f} %"]


def _motion_table(what: str, summary: dict[str, Any]) -> Table:
    """Return the table rows every designed motion has (a ``summary()`` with its limit check).

    Peaks against the limits, the speeds of the TCP and of the fastest point (the TCP or a payload's
    point) and the clearances."""
    table = Table(title=f"{what} for {summary['robot']}: {summary['duration_s']:g} s, "
                        f"harmonics {summary['harmonics']} of {summary['base_frequency_hz']:.3f} Hz")
    table.add_column("quantity", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_row("peak joint speed (of limit)", f"{100 * summary['peak_velocity_fraction']:.0f} %")
    table.add_row("peak joint acceleration (of limit)", f"{100 * summary['peak_acceleration_fraction']:.0f} %")
    table.add_row("peak joint jerk (of limit)", f"{100 * summary['peak_jerk_fraction']:.1f} %")
    table.add_row("largest joint excursion", f"{summary['max_excursion_rad']:.2f} rad")
    table.add_row("closest approach to a joint limit", f"{summary['min_limit_distance_rad']:.2f} rad")
    table.add_row("peak TCP speed / fastest point", f"{summary['peak_tcp_speed_m_s']:.3f} / "
                  f"{summary['peak_speed_m_s']:.3f} m/s (limit {summary['max_tcp_speed_m_s']:g})")
    table.add_row("floor / base clearance beyond the margins",
                  f"{summary['min_floor_clearance_m']:.3f} / {summary['min_base_clearance_m']:.3f} m")
    return table


def excitation_table(summary: dict[str, Any]) -> Table:
    """Return the tables of an identification motion: limits used and predicted uncertainty.

    ``summary`` is ``ExcitationDesign.summary()`` plus ``payload-estimator excite``'s comparison
    with Nadeau et al.'s wrist sinusoids (the ``wrist`` trajectory)."""
    table = _motion_table("Identification motion", summary)
    if summary.get("motion") == "shake":
        table.add_row("kind", f"a {summary['duration_s']:g} s shake")
    if summary.get("designed_for") == "joint_torques":
        noise = summary["joint_torque_noise"]
        std = ", ".join(f"{(e * e + f * f) ** 0.5:.2f}" for e, f in zip(noise["effort_std_n_m"],
                                                                      noise["friction_std_n_m"]))
        table.add_row("designed for", f"joint torques ({noise['source']}: {std} N·m)")
    else:
        table.add_row("designed for", "an F/T sensor")
    table.add_row("scaled condition number", f"{summary['scaled_condition_number']:.0f}")
    table.add_row("all limits respected", "yes" if summary["ok"] else "NO")

    rows = [("nominal 1 kg", summary["predicted_nominal"],
             (summary.get("wrist") or {}).get("predicted_nominal"))]
    if "predicted_payload" in summary:
        rows.append((summary["predicted_payload"]["payload"], summary["predicted_payload"],
                     (summary.get("wrist") or {}).get("predicted_payload")))
    paper_ok = (summary.get("wrist") or {}).get("ok", True)
    predicted = Table(title="Predicted std (wrench noise only: a lower bound)",
                      caption="COM: worst axis; inertia: worst entry, of the mean principal moment"
                              + ("" if paper_ok else "; *: Nadeau et al.'s sinusoids break these limits"))
    predicted.add_column("payload", no_wrap=True)
    predicted.add_column("motion", no_wrap=True)
    for name in ("mass", "COM", "inertia"):
        predicted.add_column(name, justify="right", no_wrap=True)
    for label, designed, paper in rows:
        predicted.add_row(label, "designed", *_predicted_cells(designed))
        if paper is not None:
            predicted.add_row("", "Nadeau et al." + ("" if paper_ok else "*"), *_predicted_cells(paper))
    grid = Table.grid()
    grid.add_row(table)
    grid.add_row(predicted)
    return grid


def calibration_motion_table(summary: dict[str, Any]) -> Table:
    """Return the tables of a motion for the arm's calibration.

    ``summary`` is ``CalibrationMotion.summary()`` plus ``payload-estimator excite --for
    calibration``'s comparison with Lambert's all-joint sinusoids (the ``thesis`` trajectory):
    limits used, information, per-joint speeds and predicted friction std."""
    info = summary["information"]
    thesis = summary.get("thesis")
    other = thesis["information"] if thesis else None
    mark = "" if not thesis or thesis["ok"] else "*"
    table = _motion_table("Calibration motion", summary)
    versus = f" (thesis{mark} {other['log_det_gain']:.0f})" if other else ""
    table.add_row("information gain, log det", f"{info['log_det_gain']:.0f}{versus}")
    versus = f" (thesis{mark} {other['directions_better_than_prior']})" if other else ""
    table.add_row("directions known better than the URDF",
                  f"{info['directions_better_than_prior']} of {info['parameters']}{versus}")
    table.add_row("all limits respected", "yes" if summary["ok"] else "NO")

    joints = Table(title=f"Per joint: speed range; predicted std of the viscous (N·m·s/rad) and Coulomb (N·m) "
                         f"friction for {info['effort_std']:g} N·m of effort noise",
                   caption="std: Cramér-Rao with the URDF as prior, effort noise only (a lower bound, to compare "
                           "motions)" + ("" if not mark else "; *: Lambert's thesis sinusoids break these limits"))
    joints.add_column("joint", no_wrap=True)
    joints.add_column("speeds rad/s", justify="right", no_wrap=True)
    joints.add_column("of limit", justify="right", no_wrap=True)
    joints.add_column("viscous", justify="right", no_wrap=True)
    joints.add_column("Coulomb", justify="right", no_wrap=True)
    if other:
        joints.add_column(f"thesis{mark}", justify="right", no_wrap=True)
    for j, name in enumerate(summary["joints"]):
        lo, hi, limit = info["speed_min_rad_s"][j], info["speed_max_rad_s"][j], info["speed_limit_rad_s"][j]
        row = [name, f"{lo:+.2f}..{hi:+.2f}", f"{100 * max(-lo, hi) / limit:.0f} %",
               f"{info['viscous_std'][j]:.3f}", f"{info['coulomb_std'][j]:.3f}"]
        if other:
            row.append(f"{other['viscous_std'][j]:.3f} {other['coulomb_std'][j]:.3f}")
        joints.add_row(*row)
    grid = Table.grid()
    grid.add_row(table)
    grid.add_row(joints)
    return grid
