"""Shared fixtures: seeded random generators and sensor-level ground truth."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest

# The commands write into $XDG_CACHE_HOME/payload_estimator when given no --out: the tests (and the
# commands they start) write into a temporary folder, never into the user's ~/.cache. Set on import,
# before any test or the command it starts reads it; removed when the session ends (pytest_unconfigure).
_TEST_CACHE = tempfile.mkdtemp(prefix="payload_estimator_test_cache_")
os.environ["XDG_CACHE_HOME"] = _TEST_CACHE


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_TEST_CACHE, ignore_errors=True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def make_body(rng: np.random.Generator):
    """A factory of random physically consistent bodies (see :func:`random_body`)."""
    return lambda: random_body(rng)


def random_body(rng: np.random.Generator):
    """A random physically consistent body: mass 0.1-2 kg, COM within 15 cm, PD inertia."""
    from payload_estimator.core.inertia import InertialParameters

    m = rng.uniform(0.1, 2.0)
    c = rng.uniform(-0.15, 0.15, 3)
    # principal moments of a random box, rotated
    sides = rng.uniform(0.02, 0.25, 3)
    I_p = m / 12.0 * np.array(
        [sides[1] ** 2 + sides[2] ** 2, sides[0] ** 2 + sides[2] ** 2, sides[0] ** 2 + sides[1] ** 2]
    )
    from scipy.spatial.transform import Rotation

    R = Rotation.random(random_state=rng.integers(1 << 31)).as_matrix()
    return InertialParameters.from_mass_com_inertia(m, c, R @ np.diag(I_p) @ R.T)


@pytest.fixture(autouse=True)
def _payload_estimator_logs_propagate():
    """Keep the package's log records reaching pytest's caplog.

    With ROS sourced, the launch_testing pytest plugin imports ``launch``, whose
    logger class makes every logger created afterwards stop propagating; the
    caplog-based tests would then see nothing.
    """
    import logging

    logger = logging.getLogger("payload_estimator")
    was = logger.propagate
    logger.propagate = True
    yield
    logger.propagate = was
