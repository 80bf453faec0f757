"""Human-readable reports of estimates (rich tables) for the command line."""

from __future__ import annotations

import numpy as np
from rich.table import Table

from payload_estimator.core.estimate import Estimate
from payload_estimator.core.inertia import InertialParameters

__all__ = ["estimate_table", "quality_table"]


def _vec(v: np.ndarray, scale: float = 1.0, digits: int = 4) -> str:
    return "[" + ", ".join(f"{x * scale:+.{digits}f}" for x in v) + "]"


def _diag_offdiag(I: np.ndarray) -> tuple[str, str]:
    d = f"{I[0, 0]:.3e}, {I[1, 1]:.3e}, {I[2, 2]:.3e}"
    o = f"{I[0, 1]:+.2e}, {I[0, 2]:+.2e}, {I[1, 2]:+.2e}"
    return d, o


def estimate_table(estimate: Estimate, truth: InertialParameters | None = None, frame: str = "sensor") -> Table:
    """Mass, COM and inertia of an estimate (± one standard deviation), beside the truth if known."""
    table = Table(title=f"Payload estimate ({estimate.method}, frame '{frame}')", show_lines=False)
    table.add_column("quantity")
    if truth is not None:
        table.add_column("truth", justify="right")
    table.add_column("estimate", justify="right")
    table.add_column("± 1 std", justify="right")

    def row(name: str, true: str | None, est: str, std: str) -> None:
        cells = [name] + ([true or ""] if truth is not None else []) + [est, std]
        table.add_row(*cells)

    std_known = estimate.covariance is not None
    row(
        "mass [kg]",
        f"{truth.mass:.4f}" if truth is not None else None,
        f"{estimate.mass:.4f}",
        f"{estimate.mass_std:.4f}" if std_known else "n/a",
    )
    row(
        "COM [mm]",
        _vec(truth.com, 1e3, 1) if truth is not None else None,
        _vec(estimate.com, 1e3, 1),
        _vec(estimate.com_std, 1e3, 1) if std_known else "n/a",
    )
    d_est, o_est = _diag_offdiag(estimate.inertia_com)
    d_true, o_true = _diag_offdiag(truth.inertia_com) if truth is not None else (None, None)
    row("Ixx, Iyy, Izz about COM [kg m²]", d_true, d_est, "")
    row("Ixy, Ixz, Iyz about COM [kg m²]", o_true, o_est, "")
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
    table.add_row("residual RMS force [N]", _vec(r[:3], 1.0, 3))
    table.add_row("residual RMS torque [N m]", _vec(r[3:], 1.0, 4))
    if estimate.bias is not None:
        table.add_row("F/T offset force [N]", _vec(estimate.bias[:3], 1.0, 3))
        table.add_row("F/T offset torque [N m]", _vec(estimate.bias[3:], 1.0, 4))
    table.add_row("inertia identifiable", "yes" if estimate.inertia_identifiable else "no (prior-driven)")
    table.add_row("physically consistent", "yes" if estimate.physically_consistent else "NO")
    return table
