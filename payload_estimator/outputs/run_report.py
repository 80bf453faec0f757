"""What a run of the pipeline leaves behind: the artefacts and the summary of ``demo`` and ``replay``.

Both commands end the same way: the final estimate beside the truth when it
is known (Nadeau et al.'s errors, eqs. 10-12), the URDF ``<inertial>`` fragment in
the flange frame (``payload_inertial.urdf.xml``), a convergence plot
(``convergence.png``), a JSON summary and the same tables on the console.
:class:`RunReport` does all of it once; each command adds its own fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from payload_estimator.core.history import EstimateHistory
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.metrics import ErrorMetrics, paper_errors
from payload_estimator.files import write_text_atomic
from payload_estimator.outputs.handover import Handover, check_handover
from payload_estimator.outputs.urdf import urdf_inertial
from payload_estimator.pipeline.stream import StreamEstimate

__all__ = ["RunReport", "FRAGMENT_NAME", "PLOT_NAME"]

FRAGMENT_NAME = "payload_inertial.urdf.xml"
PLOT_NAME = "convergence.png"


@dataclass
class RunReport:
    """The end of a run.

    Attributes:
        final: the last estimate of the stream.
        history: every estimate taken during the run.
        sensor_frame, flange_frame: the frames of the estimate and of the URDF fragment.
        input_problems: input rejected, by reason (``stream.health.counts``).
        title: the plot's title.
        truth: the true payload in the sensor frame, when known.
        bbox_lengths: (3,) side lengths of the payload's bounding box, m (the
            scale of Nadeau et al.'s COM and inertia errors), when known.
        wall_time_s: how long the run took.
        force: write the URDF fragment even if the estimate may not be handed over
            (:func:`~payload_estimator.outputs.handover.check_handover`), marked as forced.
    """

    final: StreamEstimate
    history: EstimateHistory
    sensor_frame: str
    flange_frame: str
    input_problems: dict[str, int]
    title: str = ""
    truth: InertialParameters | None = None
    bbox_lengths: np.ndarray | None = None
    wall_time_s: float = 0.0
    force: bool = False
    fragment_path: Path | None = field(default=None, init=False)
    plot_path: Path | None = field(default=None, init=False)

    @property
    def errors(self) -> ErrorMetrics | None:
        """Nadeau et al.'s errors of the final estimate, when the truth and the bounding box are known."""
        if self.truth is None or self.bbox_lengths is None or self.truth.mass <= 0:
            return None
        return paper_errors(self.final.estimate.params, self.truth, self.bbox_lengths)

    @property
    def handover(self) -> Handover:
        """Whether the final estimate may leave as a URDF fragment (the inertia included)."""
        return check_handover(self.final.estimate, inertia=True, force=self.force)

    @property
    def fragment(self) -> str | None:
        """The URDF ``<inertial>`` of the final estimate in the flange frame.

        None when it may not be handed over (:attr:`handover`); a forced one says so."""
        handover = self.handover
        if not handover:
            return None
        note = f"FORCED: {'; '.join(handover.reasons)}" if handover.forced else ""
        return urdf_inertial(self.final.params_in_flange, frame=self.flange_frame, note=note)

    @property
    def converged_after_s(self) -> float | None:
        """Time of the first estimate after which every estimate stayed converged, s; None if none."""
        return self.history.first_converged_time()

    def write(self, out_dir: str | Path, plot: bool = True) -> None:
        """Write the URDF fragment and the convergence plot into ``out_dir``.

        The fragment only when it may be handed over (a stale one is removed otherwise); the
        plot with ``plot``, when there is a history."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        fragment = self.fragment
        stale = out / FRAGMENT_NAME
        if fragment is None:
            if stale.exists():
                stale.unlink()  # never leave an older run's fragment beside this run's results
        else:
            self.fragment_path = stale
            write_text_atomic(self.fragment_path, fragment + "\n")
        if plot and len(self.history):
            from payload_estimator.outputs.plots import plot_convergence

            self.plot_path = Path(plot_convergence(self.history, out / PLOT_NAME, truth=self.truth, title=self.title))

    def summary(self, **fields: Any) -> dict[str, Any]:
        """The JSON summary: the command's own ``fields`` first, then what every run reports."""
        final, truth, err = self.final, self.truth, self.errors
        flange = final.params_in_flange
        return {
            **fields,
            "sensor_frame": self.sensor_frame,
            "flange_frame": self.flange_frame,
            "truth": None if truth is None else {"mass": truth.mass, "com": truth.com.tolist(),
                                                 "inertia_com": truth.inertia_com.tolist()},
            "estimate": final.estimate.to_dict(),
            "estimate_in_flange": {"mass": flange.mass, "com": flange.com.tolist(),
                                   "inertia_com": flange.inertia_com.tolist()},
            "errors_percent": None if err is None else {"mass": err.mass, "com": err.com, "inertia": err.inertia},
            "converged": bool(final.converged),
            "convergence": "converged" if final.converged else final.reason,
            "converged_after_s": self.converged_after_s,
            "mass_com_converged_after_s": self.history.first_converged_time(mass_com=True),
            "status": self.handover.status,
            "forced": self.handover.forced,
            "input_problems": dict(self.input_problems),
            "urdf_fragment": None if self.fragment_path is None else str(self.fragment_path),
            "plot": None if self.plot_path is None else str(self.plot_path),
            "wall_time_s": self.wall_time_s,
        }

    def print(self, console: Any, headline: str = "", what: str = "of motion", verbose: bool = False,
              shape_option: str = "--shape") -> None:
        """The tables, errors, input problems, convergence, fragment and plot path on a rich console.

        ``verbose``: the quality table's figures behind the model fit and the dynamism; ``shape_option``: how
        the command takes the payload's shape, for the advice ("" when it knows it)."""
        from payload_estimator.outputs.report import convergence_hint, estimate_table, next_steps, quality_table

        est = self.final.estimate
        if headline:
            console.print(headline)
        console.print(estimate_table(est, truth=self.truth, frame=self.sensor_frame))
        console.print(quality_table(est, verbose=verbose))
        for line in next_steps(est, shape_option):
            console.print(line, markup=False, highlight=False)
        err = self.errors
        if err is not None:
            console.print(f"errors (Nadeau et al., eqs. 10-12): mass {err.mass:.2f} %, COM {err.com:.2f} %, "
                          f"inertia {err.inertia:.1f} %")
        problems = self.input_problems
        console.print("input problems: " + (", ".join(f"{n} {r}" for r, n in sorted(problems.items())) or "none"))
        t_conv = self.converged_after_s
        t_mc = self.history.first_converged_time(mass_com=True)
        if t_conv is not None:
            conv = f"converged after {t_conv:.1f} s {what}"
        else:
            conv = (f"mass and COM converged after {t_mc:.1f} s {what}; " if t_mc is not None else "") + (
                f"not converged ({self.final.reason}{convergence_hint(self.final.reason)})")
        console.print(f"{conv}; {self.wall_time_s:.1f} s of wall time", markup=False, highlight=False)
        fit = est.model_fit
        if fit.checked and not fit.good and fit.cause not in conv:  # said once: "not converged (...)" may hold it
            console.print(f"[yellow]warning: the model does not fit the data: {fit.cause}[/]")
        handover = self.handover
        fragment = self.fragment
        if fragment is None:
            console.print(f"[yellow]no URDF fragment: {'; '.join(handover.reasons)} (--force writes it anyway, "
                          "marked)[/]")
        else:
            where = f" (also in {self.fragment_path})" if self.fragment_path else ""
            console.print(f"\nURDF <inertial> in '{self.flange_frame}'{where}:")
            console.print(fragment, markup=False, highlight=False)
        if self.plot_path:
            console.print(f"\nconvergence plot: {self.plot_path}")
