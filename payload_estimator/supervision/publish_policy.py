"""When an estimate is worth publishing again on a latched topic (ROS-free).

``~/urdf_inertial`` is transient-local: late joiners get the last message, so it
should change when the estimate does, not at the publish rate.
:class:`RepublishPolicy` says yes to the first estimate, to an estimate that has
just converged, and to one that differs noticeably from the last one published.
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.inertia import InertialParameters

__all__ = ["RepublishPolicy"]


class RepublishPolicy:
    """Decides whether to republish an estimate.

    Args:
        mass_rel: relative mass change that counts (default 1 %).
        com_abs: COM displacement that counts, m (default 2 mm).
        inertia_rel: change of the inertia about the COM that counts, relative to
            its Frobenius norm (default 5 %).
    """

    def __init__(self, mass_rel: float = 0.01, com_abs: float = 0.002, inertia_rel: float = 0.05) -> None:
        self.mass_rel = float(mass_rel)
        self.com_abs = float(com_abs)
        self.inertia_rel = float(inertia_rel)
        self._last: InertialParameters | None = None
        self._last_converged = False

    def reset(self) -> None:
        """Forget what was published (the next estimate is published)."""
        self._last = None
        self._last_converged = False

    def changed(self, params: InertialParameters) -> bool:
        """Whether ``params`` differ noticeably from the last published parameters."""
        last = self._last
        if last is None:
            return True
        if not np.all(np.isfinite(params.phi)):
            return False
        m0, m1 = last.mass, params.mass
        if abs(m1 - m0) > self.mass_rel * max(abs(m0), 1e-9):
            return True
        if m0 > 0 and m1 > 0:
            if np.linalg.norm(params.com - last.com) > self.com_abs:
                return True
            I0, I1 = last.inertia_com, params.inertia_com
            if np.linalg.norm(I1 - I0) > self.inertia_rel * max(float(np.linalg.norm(I0)), 1e-12):
                return True
        return False

    def should_publish(self, params: InertialParameters, converged: bool) -> bool:
        """True (and remember ``params``) for the first estimate, a newly converged one, or a changed one."""
        if not np.all(np.isfinite(params.phi)):
            return False
        publish = self._last is None or (converged and not self._last_converged) or self.changed(params)
        if publish:
            self._last = params
            self._last_converged = bool(converged)
        return publish
