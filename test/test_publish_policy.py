"""When ~/urdf_inertial is republished."""

from __future__ import annotations

import numpy as np

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.supervision.publish_policy import RepublishPolicy


def _params(m=1.0, c=(0.0, 0.0, 0.05), I=(0.01, 0.02, 0.03)):
    return InertialParameters.from_mass_com_inertia(m, np.array(c), np.diag(I))


def test_first_changed_and_converged_estimates_are_published():
    p = RepublishPolicy()
    assert p.should_publish(_params(), False)
    assert not p.should_publish(_params(m=1.005), False)          # 0.5 %: not noticeable
    assert p.should_publish(_params(m=1.005), True)               # became converged
    assert not p.should_publish(_params(m=1.005), True)
    assert p.should_publish(_params(m=1.02), True)                # 2 % mass
    assert p.should_publish(_params(m=1.02, c=(0.0, 0.005, 0.05)), True)   # 5 mm COM
    assert p.should_publish(_params(m=1.02, c=(0.0, 0.005, 0.05), I=(0.01, 0.02, 0.04)), True)
    p.reset()
    assert p.should_publish(_params(m=1.02, c=(0.0, 0.005, 0.05), I=(0.01, 0.02, 0.04)), True)


def test_non_finite_is_never_published():
    p = RepublishPolicy()
    bad = InertialParameters(np.full(10, np.nan))
    assert not p.should_publish(bad, True)
    assert p.should_publish(_params(), True)
    assert not p.should_publish(bad, True)
