"""Estimators of the ten inertial parameters, all over sufficient statistics.

:data:`ESTIMATORS` is the one table from name to estimator class (as
qpsolvers' ``solve_function[name]``): the command line, the settings'
choices, ``replay --estimator``, the launch files and the benchmarks all
read it. To add an estimator, write its class (a subclass of
:class:`Estimator` with ``name``, ``summary``, keyword-only options and
``settings_options``) and add it to :data:`_CLASSES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from payload_estimator.core.estimators.base import AUTO, Estimator, InsufficientData, Solution
from payload_estimator.core.estimators.division import PrimitiveDivision
from payload_estimator.core.estimators.least_squares import (
    OrdinaryLeastSquares,
    WeightedLeastSquares,
)
from payload_estimator.core.estimators.pmd import C1_DEFAULT, C1_PAPER, PointMassDiscretization
from payload_estimator.core.estimators.rls import RecursiveLeastSquares
from payload_estimator.core.estimators.rtls import RecursiveTotalLeastSquares
from payload_estimator.core.shapes import SampledShape
from payload_estimator.errors import ConfigurationError

__all__ = [
    "AUTO",
    "C1_PAPER",
    "C1_DEFAULT",
    "ESTIMATORS",
    "Estimator",
    "InsufficientData",
    "METHODS",
    "OrdinaryLeastSquares",
    "PointMassDiscretization",
    "PrimitiveDivision",
    "RecursiveLeastSquares",
    "RecursiveTotalLeastSquares",
    "Solution",
    "WeightedLeastSquares",
    "make_estimator",
]

_CLASSES: tuple[type[Estimator], ...] = (
    OrdinaryLeastSquares,
    WeightedLeastSquares,
    RecursiveLeastSquares,
    RecursiveTotalLeastSquares,
    PointMassDiscretization,
    PrimitiveDivision,
)
ESTIMATORS: Mapping[str, type[Estimator]] = MappingProxyType({cls.name: cls for cls in _CLASSES})
"""Name -> estimator class."""
METHODS: tuple[str, ...] = tuple(ESTIMATORS)
"""The estimator names, in registry order."""


def make_estimator(
    method: str, points_in_sensor: np.ndarray | SampledShape | None = None, *, bias: bool = False, **options: Any
) -> Estimator:
    """The one place a name becomes an estimator (the registry's class, :meth:`Estimator.create`).

    Those with ``needs_points`` (PMD) need ``points_in_sensor``: positions (n, 3) in the sensor frame, or a
    sampled shape whose parts become density groups.
    """
    try:
        cls = ESTIMATORS[method.lower()]
    except KeyError:
        raise ConfigurationError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}") from None
    return cls.create(points_in_sensor, bias=bias, **options)
