"""Human-readable reports of estimates (rich tables) for the command line."""

from __future__ import annotations

import numpy as np
from rich.table import Table

from payload_estimator.core.estimate import FROM_PRIOR, NOT_IDENTIFIED, Estimate
from payload_estimator.core.inertia import InertialParameters

__all__ = ["estimate_table", "quality_table"]


def _vec(v: np.ndarray, scale: float = 1.0, digits: int = 4) -> str:
    return "[" + ", ".join(f"{x * scale:+.{digits}f}" for x in v) + "]"


def estimate_table(estimate: Estimate, truth: InertialParameters | None = None, frame: str = "sensor") -> Table:
    """Mass, COM and inertia about the COM of an estimate (± one standard deviation), beside the truth if known."""
    table = Table(title=f"Payload estimate ({estimate.method}, frame '{frame}')")
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
        else:
            cells += [format(est, fmt) + (" (prior)" if status == FROM_PRIOR else ""),
                      format(std, fmt) if std is not None and std_known else ""]
        table.add_row(*cells)

    ident = estimate.identification
    row("mass (kg)", truth.mass if truth else None, estimate.mass, estimate.mass_std, ".4f", ident.mass)
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


def quality_table(estimate: Estimate) -> Table:
    """Samples, conditioning, residuals, identifiability and consistency of an estimate."""
    table = Table(title="Quality", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("samples used", str(estimate.samples_used))
    table.add_row("mean dynamism (eq. 4)", f"{estimate.dynamism:.3g}")
    table.add_row("condition number (scaled)", f"{estimate.condition_number:.3g}")
    r = estimate.residual_rms
    table.add_row("residual RMS force (N)", _vec(r[:3], 1.0, 3))
    table.add_row("residual RMS torque (N m)", _vec(r[3:], 1.0, 4))
    if estimate.bias is not None:
        table.add_row("F/T offset force (N)", _vec(estimate.bias[:3], 1.0, 3))
        table.add_row("F/T offset torque (N m)", _vec(estimate.bias[3:], 1.0, 4))
    table.add_row("inertia identifiable", "yes" if estimate.inertia_identifiable else "no (prior-driven)")
    missing = estimate.identification.missing()
    table.add_row("not identified", ", ".join(missing) if missing else "none")
    fit = estimate.model_fit
    excess = f", excess {fit.excess:.1f}" if np.isfinite(fit.excess) else ""
    figures = (f" (persistence {fit.persistence:.1f}" + excess
               + ")") if fit.checked else ""
    table.add_row("model fit", ("POOR" if fit.label == "poor" else fit.label) + figures)
    table.add_row("physically consistent", "yes" if estimate.physically_consistent else "NO")
    return table
