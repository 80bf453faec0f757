"""What may leave the package: one check for every hand-over of an estimate.

A URDF ``<inertial>`` fragment, a ``SetLoad``/``SetTcpLoad``/gravity-compensation
request and a ``--json`` status of ``"ok"`` all tell someone to trust the
numbers. :func:`check_handover` is the only place that decides whether they may:

* never (not even forced): non-finite values, no payload (an empty gripper, its
  mass zero within its uncertainty), a mass that is not positive, or one beyond
  the robot's payload limit;
* not without ``force``: a physically inconsistent estimate (when the inertia is
  handed over), a model that does
  not fit the data, a mass or COM component the data do not determine, an
  inertia neither the data nor a shape prior determine (when the inertia is
  handed over), and, for a controller, an estimate that has not converged.

Forced hand-overs say so: the URDF fragment carries a comment, the JSON
``"forced": true`` and the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_estimator.core.estimators.rating import no_payload_text
from payload_estimator.core.results import Estimate

__all__ = ["Handover", "check_handover"]


@dataclass(frozen=True)
class Handover:
    """The verdict of :func:`check_handover`.

    Attributes:
        ok: the estimate may be handed over (cleanly, or because it was forced).
        forced: it is handed over only because ``force`` was given.
        reasons: why it would be (or is) refused; empty for a clean hand-over.
        hard: refused for a reason ``force`` does not override.
    """

    ok: bool
    forced: bool
    reasons: tuple[str, ...]
    hard: bool = False

    @property
    def status(self) -> str:
        """``"ok"``, ``"forced: ..."`` or ``"refused: ..."``."""
        if self.ok and not self.forced:
            return "ok"
        return ("forced: " if self.ok else "refused: ") + "; ".join(self.reasons)

    def __bool__(self) -> bool:
        return self.ok


def check_handover(
    estimate: Estimate,
    *,
    inertia: bool = True,
    converged: bool | None = None,
    convergence_reason: str = "",
    max_mass: float = float("inf"),
    force: bool = False,
) -> Handover:
    """May ``estimate`` be handed over (module docstring)?

    Args:
        estimate: the estimate to hand over.
        inertia: the inertia tensor is handed over too (a URDF, Franka ``SetLoad``), not only
            mass and COM (xArm ``SetTcpLoad``, gravity compensation).
        converged: the convergence monitor's verdict, for hand-overs to a controller (None: not
            required, e.g. a URDF fragment a person reads).
        convergence_reason: why it has not converged, for the message.
        max_mass: the robot's payload limit, kg.
        force: hand it over despite the soft reasons (never the hard ones).
    """
    params = estimate.params
    if not np.all(np.isfinite(params.phi)):
        return Handover(False, False, ("the estimate has non-finite values",), hard=True)
    if estimate.identification.empty:
        return Handover(False, False, (f"no payload: the gripper is empty ({no_payload_text(estimate)})",),
                        hard=True)
    if params.mass <= 0.0:
        return Handover(False, False, (f"the estimated mass {params.mass:.4g} kg is not positive",), hard=True)
    if params.mass > max_mass:
        return Handover(False, False, (f"the estimated mass {params.mass:.3f} kg exceeds the robot's "
                                       f"{max_mass:.1f} kg",), hard=True)
    reasons = []
    if inertia and not estimate.physically_consistent:  # mass and COM alone: a positive mass is all it takes
        reasons.append("the estimate is not physically consistent")
    fit = estimate.model_fit
    if fit.checked and not fit.good:
        reasons.append(f"the model does not fit the data: {fit.cause}")
    missing = estimate.identification.missing(inertia=inertia)
    if missing:
        reasons.append(f"the data do not determine {', '.join(missing)}")
    if converged is False:
        reasons.append("the estimate has not converged" + (f" ({convergence_reason})" if convergence_reason else ""))
    if not reasons:
        return Handover(True, False, ())
    return Handover(bool(force), bool(force), tuple(reasons))
