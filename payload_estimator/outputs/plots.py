"""The convergence plot: mass, COM and inertia of the estimate over time (matplotlib, PNG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from payload_estimator.core.history import EstimateHistory
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.files import atomic_path

__all__ = ["plot_convergence", "save_figure"]


def plot_convergence(
    history: EstimateHistory,
    path: str | Path,
    truth: InertialParameters | None = None,
    title: str = "",
) -> Path:
    """Write a three-panel PNG: mass (±1 std), COM (mm), diagonal of the inertia about the COM.

    Truth, when given, is drawn dashed; the shaded span marks converged estimates.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = history.arrays()
    t = a["t"]
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    colors = ("tab:red", "tab:green", "tab:blue")

    ax = axes[0]
    ax.plot(t, a["mass"], color="k", label="estimate")
    std = np.nan_to_num(a["mass_std"])
    ax.fill_between(t, a["mass"] - std, a["mass"] + std, color="k", alpha=0.15, label="±1 std")
    if truth is not None:
        ax.axhline(truth.mass, color="k", ls="--", lw=1, label="truth")
    ax.set_ylabel("mass [kg]")
    ax.legend(loc="best", fontsize=8)

    ax = axes[1]
    for i, axis in enumerate("xyz"):
        ax.plot(t, 1e3 * a["com"][:, i], color=colors[i], label=f"c{axis}")
        if truth is not None:
            ax.axhline(1e3 * truth.com[i], color=colors[i], ls="--", lw=1)
    ax.set_ylabel("COM [mm]")
    ax.legend(loc="best", fontsize=8, ncol=3)

    ax = axes[2]
    for i, axis in enumerate(("xx", "yy", "zz")):
        ax.plot(t, a["inertia_com"][:, i, i], color=colors[i], label=f"I{axis}")
        if truth is not None:
            ax.axhline(truth.inertia_com[i, i], color=colors[i], ls="--", lw=1)
    ax.set_ylabel("inertia about COM [kg m²]")
    ax.set_xlabel("time [s]")
    ax.legend(loc="best", fontsize=8, ncol=3)

    conv = a["converged"]
    if conv.any():
        t_conv = t[np.argmax(conv)]
        for ax in axes:
            ax.axvspan(t_conv, t[-1], color="tab:green", alpha=0.06)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def save_figure(fig, path: str | Path) -> Path:
    """Lay out, write atomically (the format from the suffix, PNG by default) and close ``fig``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    return path
