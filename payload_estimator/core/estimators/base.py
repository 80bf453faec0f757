"""What all estimators share: sample intake, and linear algebra on the statistics."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from payload_estimator.core.estimate import Estimate
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.regressor import N_PARAMS
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.statistics import RegressorStatistics

__all__ = [
    "Estimator",
    "InsufficientData",
    "Solution",
    "ChannelWeighting",
    "AUTO",
    "solve_psd",
    "pinv_psd",
    "scaled_condition_number",
    "channel_variances",
    "inertia_identifiable",
    "IDENTIFIABLE_REL_STD",
    "channel_weights_from_std",
    "check_forgetting",
]

IDENTIFIABLE_REL_STD = 0.25
"""Inertia counts as identified when each principal-moment std is below this fraction."""
_INERTIA_SCALE_FLOOR_M = 0.02
"""Radius (m) of gyration below which inertia uncertainty is judged against ``m r²``."""
_VARIANCE_FLOOR = 1e-12
_CHUNK = 256


AUTO = "auto"
"""``channel_std=AUTO``: estimate each channel's noise from the residuals (WLS, PMD)."""


def channel_weights_from_std(channel_std: np.ndarray | None) -> np.ndarray | None:
    """(6,) inverse variances from the noise std of ``[fx, fy, fz, tx, ty, tz]`` (N, N·m), or None."""
    if channel_std is None:
        return None
    std = np.asarray(channel_std, dtype=float)
    if std.shape != (6,) or np.any(std <= 0) or not np.all(np.isfinite(std)):
        raise ValueError("channel_std must be 6 positive numbers (N, N, N, N·m, N·m, N·m)")
    return 1.0 / std**2


@dataclass(frozen=True)
class ChannelWeighting:
    """How the six wrench channels are weighted; the one meaning of ``channel_std`` for every estimator.

    * ``None``: uniform weights (every channel 1; forces in N and torques in N·m
      count alike, as in the papers).
    * ``"auto"``: each channel by the inverse of its residual variance, estimated
      from the data (estimators whose ``supports_auto_weights`` is true).
    * six numbers: the known noise std of ``[fx, fy, fz, tx, ty, tz]`` (N, N·m);
      each channel by its inverse variance, and the covariance is then the
      inverse information.
    """

    known: np.ndarray | None = None
    auto: bool = False

    @classmethod
    def parse(cls, channel_std: Any, allow_auto: bool, who: str) -> ChannelWeighting:
        if isinstance(channel_std, str):
            if channel_std != AUTO:
                raise ValueError(f"{who}: channel_std must be None, 'auto' or 6 stds, got {channel_std!r}")
            if not allow_auto:
                raise ValueError(f"{who}: channel_std='auto' is not supported; give None or 6 stds")
            return cls(None, True)
        return cls(channel_weights_from_std(channel_std), False)


@dataclass(frozen=True)
class Solution:
    """What an estimator's solve hands to :meth:`Estimator.estimate`, which rates it.

    Attributes:
        theta: the unknowns ``[phi; beta]`` (10, or 16 with the F/T offsets).
        information: (p, p) whitened Fisher information of ``theta``.
        covariance: covariance of ``phi`` (its leading 10 x 10 block is used), or None.
        residual_ss: (6,) residual sum of squares per wrench channel.
        weight_sum: the (weighted) number of samples behind ``residual_ss``.
        normal_matrix: (p, p) Gram of the regressor, for the scaled condition number.
        extras: estimator-specific arrays that travel in the estimate (e.g. PMD's
            ``points_in_sensor`` and ``point_masses``).
    """

    theta: np.ndarray
    information: np.ndarray
    covariance: np.ndarray | None
    residual_ss: np.ndarray
    weight_sum: float
    normal_matrix: np.ndarray
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)


def check_forgetting(forgetting: float) -> float:
    """A per-sample forgetting factor, validated to lie in (0, 1]."""
    if not 0.0 < forgetting <= 1.0:
        raise ValueError("forgetting must be in (0, 1]")
    return float(forgetting)


class InsufficientData(ValueError):
    """Raised by ``estimate()`` before any usable sample has arrived."""


def solve_psd(A: np.ndarray, c: np.ndarray, rcond: float = 1e-10) -> tuple[np.ndarray, int]:
    """Minimum-norm solution of ``A x = c`` for a symmetric PSD ``A``, with its rank.

    Columns are equilibrated first (Jacobi scaling) so that ``rcond`` is relative
    to a well-scaled matrix.
    """
    d = np.sqrt(np.clip(np.diag(A), 0.0, None))
    d[d == 0.0] = 1.0
    As = A / np.outer(d, d)
    lam, V = np.linalg.eigh(0.5 * (As + As.T))
    keep = lam > rcond * max(lam[-1], 0.0) if lam[-1] > 0 else np.zeros_like(lam, bool)
    xs = V[:, keep] @ ((V[:, keep].T @ (c / d)) / lam[keep])
    return xs / d, int(keep.sum())


def pinv_psd(A: np.ndarray, rcond: float = 1e-10) -> np.ndarray:
    """Pseudo-inverse of a symmetric PSD matrix (Jacobi-scaled, eigenvalue cutoff ``rcond``)."""
    d = np.sqrt(np.clip(np.diag(A), 0.0, None))
    d[d == 0.0] = 1.0
    As = A / np.outer(d, d)
    lam, V = np.linalg.eigh(0.5 * (As + As.T))
    keep = lam > rcond * max(lam[-1], 0.0) if lam[-1] > 0 else np.zeros_like(lam, bool)
    inv = (V[:, keep] / lam[keep]) @ V[:, keep].T
    return inv / np.outer(d, d)


def scaled_condition_number(A: np.ndarray) -> float:
    """Condition number of the column-scaled regressor, from its Gram ``A = Y^T Y``.

    Columns scaled to unit norm (Gautier & Khalil 1992); ``cond(Y D) = sqrt(cond(D A D))``.
    Returns ``inf`` when a column is empty or the matrix is singular.
    """
    d = np.sqrt(np.clip(np.diag(A), 0.0, None))
    if np.any(d == 0.0):
        return float("inf")
    lam = np.linalg.eigvalsh(A / np.outer(d, d))
    if lam[0] <= lam[-1] * 1e-15:
        return float("inf")
    return float(np.sqrt(lam[-1] / lam[0]))


def channel_variances(
    stats: RegressorStatistics, x: np.ndarray, with_bias: bool
) -> np.ndarray:
    """(6,) residual variance of each wrench channel at the unknowns ``x``.

    Degrees of freedom: the (weighted) number of samples minus the unknowns
    shared out over the six channels.
    """
    rss = np.clip(stats.channel_residuals(x, with_bias), 0.0, None)
    dof = max(stats.weight_sum - x.shape[0] / 6.0, 1.0)
    return np.maximum(rss / dof, _VARIANCE_FLOOR)


def inertia_identifiable(
    information: np.ndarray, params: InertialParameters, rel_std: float = IDENTIFIABLE_REL_STD
) -> bool:
    """Whether the data determine the inertia tensor.

    ``information`` is the (whitened) Fisher information of the unknowns
    (phi first). The marginal covariance of the six inertia entries is the
    inverse of the Schur complement of the other unknowns; the inertia counts
    as identified when the standard deviation of each diagonal entry is below
    ``rel_std`` times the mean principal moment about the COM (floored at
    ``m (2 cm)²`` so that point-like payloads, and estimates whose inertia is
    not positive definite, are not judged against their own scale).
    """
    if not np.all(np.isfinite(information)) or params.mass <= 0.0:
        return False
    # The marginal covariance of the inertia entries is their block of the inverse
    # information (= the inverse of the Schur complement of the other unknowns).
    d = np.sqrt(np.clip(np.diag(information), 0.0, None))
    if np.any(d[4:N_PARAMS] == 0.0):
        return False
    d[d == 0.0] = 1.0
    lam, V = np.linalg.eigh(information / np.outer(d, d))
    if lam[0] <= max(lam[-1], 0.0) * 1e-12:
        return False
    cov = (V / lam) @ V.T / np.outer(d, d)
    std_diag = np.sqrt(np.clip(np.diag(cov)[[4, 7, 9]], 0.0, None))  # Jxx, Jyy, Jzz
    moments = params.principal_moments()
    own = float(np.mean(moments)) if moments[0] > 0.0 else 0.0  # a non-physical tensor sets no scale
    scale = max(own, params.mass * _INERTIA_SCALE_FLOOR_M**2)
    return bool(np.all(std_diag < rel_std * scale))


class Estimator(abc.ABC):
    """An online estimator of the ten inertial parameters.

    Feed it batches of :class:`SensorSamples` with :meth:`update`; ask for an
    :class:`Estimate` whenever you like with :meth:`estimate`. Samples with a
    non-finite value, or one beyond :data:`~payload_estimator.core.samples.MAX_ABS_VALUE`,
    are dropped and counted in :attr:`rejected_samples`; values below
    :data:`~payload_estimator.core.samples.MIN_ABS_VALUE` count as 0.

    A subclass implements ``_accumulate`` (samples into its statistics),
    ``_reset`` and ``_solve`` (a :class:`Solution`); this class turns the
    solution into the :class:`Estimate` (uncertainty, residuals, condition
    number, identifiability), the same way for every estimator. Its options
    are keyword-only constructor arguments; :attr:`settings_options` says
    which settings fields feed them, and :attr:`needs_points` whether it
    takes point-mass positions. Registered by name in
    :data:`payload_estimator.core.estimators.ESTIMATORS`.
    """

    name: ClassVar[str] = "estimator"
    summary: ClassVar[str] = ""
    """One line for help texts."""
    needs_points: ClassVar[bool] = False
    """True when the constructor's first argument is ``points_in_sensor`` (n, 3)."""
    settings_options: ClassVar[Mapping[str, str]] = {}
    """Constructor option -> ``Settings`` field it is read from."""

    @classmethod
    def options_from(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor options this estimator reads from a settings mapping."""
        return {option: values[name] for option, name in cls.settings_options.items()}

    @classmethod
    def create(cls, points_in_sensor: np.ndarray | None = None, *, bias: bool = False, **options: Any) -> Estimator:
        """An instance with ``options``; ``points_in_sensor`` (n, 3) is required by (and only
        passed to) estimators with :attr:`needs_points`."""
        make: Any = cls  # subclasses add the points argument and their own options
        if not cls.needs_points:
            return make(bias=bias, **options)
        if points_in_sensor is None:
            raise ValueError(f"{cls.name} needs point-mass positions (a shape or a points file)")
        return make(points_in_sensor, bias=bias, **options)

    def __init__(self, *, bias: bool = False) -> None:
        self.with_bias = bool(bias)
        self.rejected_samples = 0
        self._dynamism_sum = 0.0
        self._n_seen = 0

    @property
    def samples_used(self) -> int:
        return self._n_seen

    @property
    def mean_dynamism(self) -> float:
        return self._dynamism_sum / self._n_seen if self._n_seen else 0.0

    def update(self, samples: SensorSamples) -> None:
        """Take in a batch of samples (vectorised; any size, including one)."""
        ok = samples.usable_mask()
        if not ok.all():
            self.rejected_samples += int((~ok).sum())
            samples = samples.select(ok)
        if len(samples) == 0:
            return
        samples = samples.with_tiny_values_zeroed()
        self._dynamism_sum += float(samples.dynamism().sum())
        self._n_seen += len(samples)
        if len(samples) <= _CHUNK:
            self._accumulate(samples)
            return
        # Chunks small enough to stay in cache are several times faster than one big product.
        for start in range(0, len(samples), _CHUNK):
            self._accumulate(samples.select(slice(start, start + _CHUNK)))

    def reset(self) -> None:
        """Forget all data."""
        self.rejected_samples = 0
        self._dynamism_sum = 0.0
        self._n_seen = 0
        self._reset()

    def estimate(self) -> Estimate:
        """The current estimate; raises :class:`InsufficientData` before any sample."""
        if self._n_seen == 0:
            raise InsufficientData(f"{self.name}: no samples yet")
        sol = self._solve()
        params = InertialParameters(sol.theta[:N_PARAMS])
        return Estimate(
            method=self.name,
            params=params,
            covariance=None if sol.covariance is None else sol.covariance[:N_PARAMS, :N_PARAMS],
            bias=sol.theta[N_PARAMS:].copy() if self.with_bias else None,
            residual_rms=np.sqrt(np.clip(sol.residual_ss, 0.0, None) / max(sol.weight_sum, 1e-300)),
            condition_number=scaled_condition_number(sol.normal_matrix),
            samples_used=self.samples_used,
            inertia_identifiable=inertia_identifiable(sol.information, params),
            dynamism=self.mean_dynamism,
            extras=dict(sol.extras),
        )

    @abc.abstractmethod
    def _accumulate(self, samples: SensorSamples) -> None: ...

    @abc.abstractmethod
    def _reset(self) -> None: ...

    @abc.abstractmethod
    def _solve(self) -> Solution: ...

