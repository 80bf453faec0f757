"""The estimator base class: sample intake, options, and the estimate built from a solver's answer.

:class:`Estimator` takes samples and turns a subclass's :class:`Solution` into an
:class:`~payload_estimator.core.results.Estimate`, the same way for every estimator. What it
rates the solution with lives beside it, and is importable from here for the estimators:
:mod:`~payload_estimator.core.estimators.linear_algebra` (PSD solves, the scaled condition number),
:mod:`~payload_estimator.core.estimators.uncertainty` (the sandwich covariance, errors in
variables) and :mod:`~payload_estimator.core.estimators.rating` (identification, model fit).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from payload_estimator.core.estimators.linear_algebra import (
    pinv_psd,
    scaled_condition_number,
    scaled_eigh,
    solve_psd,
)
from payload_estimator.core.estimators.rating import (
    EXCESS_LIMIT,
    IDENTIFIABLE_REL_STD,
    IDENTIFIED_COM_STD,
    IDENTIFIED_MASS_REL_STD,
    PERSISTENCE_LIMIT,
    RESIDUAL_SHARE_LIMIT,
    data_covariance,
    identify,
    inertia_identifiable,
    model_fit,
)
from payload_estimator.core.estimators.uncertainty import (
    EIV_FLOOR,
    channel_variances,
    compensate_regressor_noise,
    correlation_factors,
    noise_level_covariance,
    sandwich,
)
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.offset_windows import (
    WindowedStatistics,
    current_offsets,
    current_offsets_covariance,
    current_offsets_rate,
)
from payload_estimator.core.point_masses import SampledShape
from payload_estimator.core.regressor import N_PARAMS, regressor_noise_gram
from payload_estimator.core.results import NOT_APPLICABLE, NOT_IDENTIFIED, Estimate
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.signal_noise import SignalNoise
from payload_estimator.core.statistics import RegressorStatistics
from payload_estimator.errors import ConfigurationError, InsufficientData

__all__ = [
    "Estimator",
    "InsufficientData",
    "Solution",
    "ChannelWeighting",
    "AUTO",
    "solve_psd",
    "pinv_psd",
    "scaled_eigh",
    "scaled_condition_number",
    "channel_variances",
    "inertia_identifiable",
    "IDENTIFIABLE_REL_STD",
    "channel_weights_from_std",
    "check_forgetting",
    "offset_sensitivity",
    "KinematicNoise",
    "correlation_factors",
    "sandwich",
    "compensate_regressor_noise",
    "EIV_FLOOR",
    "noise_level_covariance",
    "identify",
    "model_fit",
    "IDENTIFIED_MASS_REL_STD",
    "IDENTIFIED_COM_STD",
    "PERSISTENCE_LIMIT",
    "RESIDUAL_SHARE_LIMIT",
    "EXCESS_LIMIT",
]

_CHUNK = 2048
"""Samples accumulated at once (a chunk that stays in cache)."""
_DEFER = 64
"""Samples of small batches gathered before they are taken in, in one vectorised pass: a batch of one
sample would otherwise pay the fixed cost of every numpy call. Every read takes them in first."""


AUTO = "auto"
"""``channel_std=AUTO``: estimate each channel's noise from the residuals (WLS, PMD)."""


def channel_weights_from_std(channel_std: np.ndarray | None) -> np.ndarray | None:
    """(6,) inverse variances from the noise std of ``[fx, fy, fz, tx, ty, tz]`` (N, N·m), or None."""
    if channel_std is None:
        return None
    std = np.asarray(channel_std, dtype=float)
    if std.shape != (6,) or np.any(std <= 0) or not np.all(np.isfinite(std)):
        raise ConfigurationError("channel_std must be 6 positive numbers (N, N, N, N·m, N·m, N·m)")
    return 1.0 / std**2


@dataclass(frozen=True)
class ChannelWeighting:
    """How the six wrench channels are weighted; the one meaning of ``channel_std`` for every estimator.

    * ``None``: uniform weights (every channel 1; forces in N and torques in N·m
      count alike, as in Nadeau et al.'s baselines).
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
        """Return the weighting ``channel_std`` means (class docstring) for the estimator ``who``.

        Args:
            channel_std: None, ``"auto"`` or six stds (N, N, N, N·m, N·m, N·m).
            allow_auto: whether the estimator takes ``"auto"``.
            who: the estimator's name, for the message.

        Raises:
            ConfigurationError: anything but None, ``"auto"`` (where taken) or six positive stds.
        """
        if isinstance(channel_std, str):
            if channel_std != AUTO:
                raise ConfigurationError(f"{who}: channel_std must be None, 'auto' or 6 stds, got {channel_std!r}")
            if not allow_auto:
                raise ConfigurationError(f"{who}: channel_std='auto' is not supported; give None or 6 stds")
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
        constrained: the estimate its constraints alone give (PMD's point masses in the shape), when
            ``theta`` is not it: moved onto the data's mass and first moment
            (:func:`~payload_estimator.core.estimators.rating.anchor_to_data`). The model fit judges the
            shape by it.
        reference_covariance: the unconstrained fit's covariance, as :func:`~.rating.data_covariance`'s triple,
            that the model fit compares with (None: from ``information``).
    """

    theta: np.ndarray
    information: np.ndarray
    covariance: np.ndarray | None
    residual_ss: np.ndarray
    weight_sum: float
    normal_matrix: np.ndarray
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)
    constrained: np.ndarray | None = None
    reference_covariance: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


class KinematicNoise:
    """The noise std of the measured accelerations that build the regressor (errors in variables).

    ``spec``: None (taken as exact: no compensation), ``"auto"`` (measured from the samples'
    own linear and angular accelerations, :class:`~payload_estimator.core.signal_noise.SignalNoise`),
    or ``(lin_acc_std, ang_acc_std)`` in m/s² and rad/s² per axis (a data sheet's figures).
    """

    def __init__(self, spec: Any) -> None:
        self.auto = isinstance(spec, str)
        if self.auto and spec != AUTO:
            raise ConfigurationError(f"kinematic_noise must be None, 'auto' or (lin_acc_std, ang_acc_std), "
                                     f"got {spec!r}")
        self.known: tuple[float, float] | None = None
        if spec is not None and not self.auto:
            values = np.asarray(spec, dtype=float)
            if values.shape != (2,) or np.any(values < 0) or not np.all(np.isfinite(values)):
                raise ConfigurationError("kinematic_noise must be two non-negative numbers (m/s², rad/s²)")
            self.known = (float(values[0]), float(values[1]))
        self._lin_acc = SignalNoise()
        self._ang_acc = SignalNoise()
        self._supplied: tuple[float, float, float] | None = None
        self._whitened = False
        """Samples with their own wrench information arrived (joint torques): their rows are mixed per sample,
        and the expected noise Gram of the plain regressor rows is not theirs; nothing is compensated."""

    def supply(self, lin_acc_std: float, ang_acc_std: float, relative_variance: float) -> None:
        """Take noise levels that whoever made the samples knows better than the samples show.

        Only with ``"auto"``. Accelerations differentiated from filtered encoder positions carry low-passed noise,
        which the samples' high differences barely see; the robot pipeline knows the filter and the
        encoders' noise, and supplies what it implies (:meth:`EstimationStream.process`)."""
        if self.auto and np.isfinite(lin_acc_std) and np.isfinite(ang_acc_std):
            self._supplied = (float(lin_acc_std), float(ang_acc_std), float(relative_variance))

    def update(self, samples: SensorSamples) -> None:
        """Follow the noise of the samples' accelerations (``"auto"``).

        Also note samples that carry their own wrench information (nothing is compensated for
        them)."""
        if samples.wrench_information_sqrt is not None:
            self._whitened = True
        if self.auto and self._supplied is None:
            self._lin_acc.update(samples.lin_acc_in_sensor)
            self._ang_acc.update(samples.ang_acc_in_sensor)

    def reset(self) -> None:
        """Forget the measured and the supplied noise levels."""
        self._lin_acc.reset()
        self._ang_acc.reset()
        self._supplied = None
        self._whitened = False

    @property
    def whitened(self) -> bool:
        """Samples with their own wrench information arrived: their rows have unit noise already."""
        return self._whitened

    def std(self) -> tuple[float, float] | None:
        """``(lin_acc_std, ang_acc_std)``, or None when there is nothing to compensate."""
        if self._whitened:
            return None
        if self.known is not None:
            return self.known
        if not self.auto:
            return None
        if self._supplied is not None:
            return self._supplied[0], self._supplied[1]
        lin, ang = self._lin_acc.std(), self._ang_acc.std()
        if not (np.isfinite(lin) and np.isfinite(ang)):
            return None
        return lin, ang

    def terms(
        self, stats: RegressorStatistics, with_bias: bool, reduced: bool = False
    ) -> list[tuple[np.ndarray, float]]:
        """Return the expected noise part of ``stats``' per-channel Grams of the unknowns.

        One term per noisy signal (linear, angular acceleration): ``(G_i (6, p, p), v_i)`` with
        ``v_i`` the relative variance of that signal's estimated noise variance (0 when given)."""
        std = self.std()
        if std is None:
            return []
        p = N_PARAMS + (6 if with_bias else 0)
        out = []
        for signal, (lin, ang) in enumerate(((std[0], 0.0), (0.0, std[1]))):
            if lin == 0.0 and ang == 0.0:
                continue
            D = np.zeros((6, p, p))
            D[:, :N_PARAMS, :N_PARAMS] = stats.weight_sum * regressor_noise_gram(lin, ang, reduced=reduced)
            monitor = self._lin_acc if signal == 0 else self._ang_acc
            if not self.auto:
                rel_var = 0.0
            elif self._supplied is not None:
                rel_var = self._supplied[2]
            else:
                rel_var = monitor.relative_variance()
            out.append((D, rel_var))
        return out

    def gram(self, stats: RegressorStatistics, with_bias: bool, reduced: bool = False) -> np.ndarray | None:
        """(6, p, p) expected noise part of ``stats``' per-channel Grams of the unknowns, or None."""
        terms = self.terms(stats, with_bias, reduced)
        return sum((D for D, _ in terms), np.zeros_like(terms[0][0])) if terms else None


def offset_sensitivity(stats: RegressorStatistics, channel_weights: np.ndarray | None) -> np.ndarray | None:
    """Return ``K`` (10, 6): how far a constant offset in every sample moves a least-squares estimate.

    ``K = A_pp^+ A_pb``: the normal equations' cross block of the parameters and the offsets, over the
    parameters' own. With offsets per window, a window that removes its offsets' mean or line does not
    see one: only the first window of an estimate whose offsets were known (subtracted) does. None when
    the statistics are not finite."""
    A = stats.normal_equations(True, channel_weights).A
    if not np.all(np.isfinite(A)):
        return None
    return pinv_psd(A[:N_PARAMS, :N_PARAMS]) @ A[:N_PARAMS, N_PARAMS:]


def check_forgetting(forgetting: float) -> float:
    """A per-sample forgetting factor, validated to lie in (0, 1]."""
    if not 0.0 < forgetting <= 1.0:
        raise ConfigurationError("forgetting must be in (0, 1]")
    return float(forgetting)


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
    settings_options: ClassVar[Mapping[str, str]] = {"offset_window_s": "offset_window_s"}
    """Constructor option -> ``Settings`` field it is read from (a subclass adds its own to these)."""
    has_prior: ClassVar[bool] = False
    """True when a prior fills in what the data do not determine (PMD: the shape)."""

    @classmethod
    def options_from(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor options this estimator reads from a settings mapping."""
        return {option: values[name] for option, name in cls.settings_options.items()}

    @classmethod
    def create(
        cls, points_in_sensor: np.ndarray | SampledShape | None = None, *, bias: bool = False, **options: Any
    ) -> Estimator:
        """Return an instance with ``options``.

        ``points_in_sensor`` (n, 3), m, or a shape's
        :class:`~payload_estimator.core.shapes.SampledShape` (whose parts become density groups),
        is required by (and only passed to) estimators with :attr:`needs_points`."""
        make: Any = cls  # subclasses add the points argument and their own options
        if not cls.needs_points:
            return make(bias=bias, **options)
        if points_in_sensor is None:
            raise ConfigurationError(f"{cls.name} needs point-mass positions (a shape or a points file)")
        if isinstance(points_in_sensor, SampledShape):
            options = {"part_labels": points_in_sensor.part, "point_volumes": points_in_sensor.volume,
                       "own_inertia": points_in_sensor.own_inertia, **options}
            points_in_sensor = points_in_sensor.points_in_sensor
        return make(points_in_sensor, bias=bias, **options)

    def __init__(self, *, bias: bool = False, kinematic_noise: Any = None, offset_window_s: float = 0.0) -> None:
        if not (np.isfinite(offset_window_s) and offset_window_s >= 0.0):
            raise ConfigurationError(f"offset_window_s must be zero or positive, got {offset_window_s!r}")
        self.with_bias = bool(bias)
        self.offset_window_s = float(offset_window_s)
        """s: the offsets are a line per window this long (:mod:`~payload_estimator.core.offset_windows`);
        0: constant over the run."""
        self.kinematic_noise = KinematicNoise(kinematic_noise)
        self._rejected = 0
        self._dynamism_sum = 0.0
        self._n_seen = 0
        self._pending = np.empty((_DEFER, 19))
        """Small batches gathered (:meth:`update`): a row per sample, the stamp then the 18 values, copied (the
        caller may reuse its arrays)."""
        self._n_pending = 0
        self.kept_offsets_covariance: np.ndarray | None = None
        """(6, 6) N² and (N·m)²: the uncertainty of offsets subtracted from the samples before they came
        (a payload tracker's kept ones, estimated over the previous payloads), for an estimator that does
        not estimate them. Their error moves the estimate as a constant offset in its samples would
        (:func:`offset_sensitivity`): the estimate's covariance, and what :func:`identify` and
        :func:`model_fit` judge by, include it. None: exact."""

    @property
    def samples_used(self) -> int:
        """Samples taken in (the dropped ones aside)."""
        self._flush()
        return self._n_seen

    @property
    def rejected_samples(self) -> int:
        """Samples dropped (a value not finite or out of range, :meth:`SensorSamples.usable_mask`)."""
        self._flush()
        return self._rejected

    @property
    def mean_dynamism(self) -> float:
        """The samples' mean dynamism (:meth:`SensorSamples.dynamism`), 0 before any."""
        self._flush()
        return self._dynamism_sum / self._n_seen if self._n_seen else 0.0

    def update(self, samples: SensorSamples) -> None:
        """Take in a batch of samples (vectorised; any size, including one).

        Batches smaller than :data:`_DEFER` samples are gathered and taken in together, when
        :data:`_DEFER` samples are held or anything is read (an estimate, a count): what the
        estimator answers is the same, and a caller feeding one sample at a time pays a fraction of
        the per-call cost."""
        n = len(samples)
        if n == 0:
            return
        if n >= _DEFER or samples.wrench_information_sqrt is not None:
            self._flush()
            self._take(samples)
            return
        if self._n_pending + n > _DEFER:
            self._flush()
        rows = self._pending[self._n_pending:self._n_pending + n]
        rows[:, 0] = samples.t
        rows[:, 1:4] = samples.lin_acc_in_sensor
        rows[:, 4:7] = samples.ang_vel_in_sensor
        rows[:, 7:10] = samples.ang_acc_in_sensor
        rows[:, 10:13] = samples.gravity_in_sensor
        rows[:, 13:19] = samples.wrench_in_sensor
        self._n_pending += n
        if self._n_pending == _DEFER:
            self._flush()

    def _flush(self) -> None:
        """Take in the gathered small batches."""
        if not self._n_pending:
            return
        rows = self._pending[:self._n_pending].copy()
        self._n_pending = 0
        self._take(SensorSamples(rows[:, 0], rows[:, 1:4], rows[:, 4:7], rows[:, 7:10], rows[:, 10:13],
                                 rows[:, 13:19]))

    def _take(self, samples: SensorSamples) -> None:
        """Validate a batch and accumulate it."""
        samples, dropped = samples.usable()
        self._rejected += dropped
        if len(samples) == 0:
            return
        self.kinematic_noise.update(samples)
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
        self._rejected = 0
        self._dynamism_sum = 0.0
        self._n_seen = 0
        self._n_pending = 0
        self.kinematic_noise.reset()
        self._reset()

    def input_break(self) -> None:
        """Note that the input broke off and resumed (a gap, a pause).

        With offsets per window, the next sample starts a new window (the offsets may have jumped while
        the sensor was silent)."""
        self._flush()
        for stats in self._statistics():
            if isinstance(stats, WindowedStatistics):
                stats.new_window()

    def estimate(self, offsets_uncertainty: bool = False) -> Estimate:
        """The current estimate; raises :class:`InsufficientData` before any sample.

        Args:
            offsets_uncertainty: also give the offsets' covariance and drift rate
                (:attr:`Estimate.bias_covariance`, :attr:`Estimate.bias_rate`): what a payload tracker
                keeps at a change; not at every estimate (they cost a fraction of a millisecond).
        """
        self._flush()
        if self._n_seen == 0:
            raise InsufficientData(f"{self.name}: no samples yet")
        p = N_PARAMS + (6 if self.with_bias else 0)
        if 6 * self._n_seen < p:
            raise InsufficientData(
                f"{self.name}: {self._n_seen} sample(s) give {6 * self._n_seen} equations for {p} unknowns"
            )
        sol = self._solve()
        params = InertialParameters(sol.theta[:N_PARAMS])
        stats, weights, unconstrained = self._fit_inputs()
        data = data_covariance(sol.information) if np.all(np.isfinite(sol.information)) else None
        covariance = None if sol.covariance is None else sol.covariance[:N_PARAMS, :N_PARAMS]
        reference = sol.reference_covariance
        kept = self._kept_offsets_term(stats, weights)
        if kept is not None:
            covariance = None if covariance is None else covariance + kept
            if data is not None:
                data = (data[0] + kept, data[1], data[2])
            if reference is not None:
                reference = (reference[0] + kept, reference[1], reference[2])
        identification = identify(sol.information, params, self.has_prior, data, unconstrained)
        if identification.empty and covariance is None and data is not None:
            covariance = np.array(data[0])  # at its bound (no payload) a prior holds nothing: the data's own
        fit = model_fit(stats, sol.theta if sol.constrained is None else sol.constrained, self.with_bias, weights,
                        sol.information, unconstrained, data if reference is None else reference,
                        empty=identification.empty)
        if not fit.shape_holds and identification.inertia != NOT_APPLICABLE:
            # the shape the inertia came from is refuted, and the data's own inertia is not what is reported
            identification = replace(identification, inertia=NOT_IDENTIFIED)
        return Estimate(
            estimator=self.name,
            params=params,
            covariance=covariance,
            bias=self._offsets(sol.theta),
            residual_rms=np.sqrt(np.clip(sol.residual_ss, 0.0, None) / max(sol.weight_sum, 1e-300)),
            condition_number=scaled_condition_number(sol.normal_matrix),
            samples_used=self.samples_used,
            inertia_identifiable=inertia_identifiable(sol.information, params),
            dynamism=self.mean_dynamism,
            extras=dict(sol.extras),
            identification=identification,
            model_fit=fit,
            bias_covariance=self._offsets_covariance(sol.theta, sol.covariance) if offsets_uncertainty else None,
            bias_rate=self._offsets_rate(sol.theta) if offsets_uncertainty else None,
        )

    def _kept_offsets_term(self, stats: RegressorStatistics | None, weights: np.ndarray | None) -> np.ndarray | None:
        """(10, 10) what the kept offsets' uncertainty adds to the covariance (``K S K^T``), or None."""
        S = self.kept_offsets_covariance
        if self.with_bias or S is None or stats is None:
            return None
        K = offset_sensitivity(stats, weights)
        if K is None:
            return None
        term = K @ np.asarray(S, dtype=float) @ K.T
        return 0.5 * (term + term.T)

    def _offsets_rate(self, theta: np.ndarray) -> np.ndarray | None:
        """(6,) how fast :meth:`_offsets` drift in the newest window, or None (no ``bias``, no windows)."""
        windowed = [s for s in self._statistics() if isinstance(s, WindowedStatistics)]
        if not self.with_bias or not windowed:
            return None
        return current_offsets_rate(windowed, theta[:N_PARAMS])

    def _offsets_covariance(self, theta: np.ndarray, covariance: np.ndarray | None) -> np.ndarray | None:
        """(6, 6) covariance of :meth:`_offsets` (None without ``bias``, or when unknown)."""
        if not self.with_bias or covariance is None:
            return None
        windowed = [s for s in self._statistics() if isinstance(s, WindowedStatistics)]
        if windowed:
            return current_offsets_covariance(windowed, theta[:N_PARAMS], covariance[:N_PARAMS, :N_PARAMS])
        if covariance.shape[0] >= N_PARAMS + 6:
            return np.array(covariance[N_PARAMS:N_PARAMS + 6, N_PARAMS:N_PARAMS + 6])
        return None

    def _new_statistics(self) -> RegressorStatistics:
        """Empty statistics for this estimator's samples: with offsets per window when ``offset_window_s``.

        The first window's offsets are unknown with ``bias`` (their mean is left out), known otherwise
        (the samples come with them subtracted)."""
        if self.offset_window_s > 0.0:
            return WindowedStatistics(self.offset_window_s, first_known=not self.with_bias)
        return RegressorStatistics()

    def _statistics(self) -> list[RegressorStatistics]:
        """Every statistics object the estimator keeps its samples in (for the offsets they imply)."""
        stats = getattr(self, "stats", None)
        return [stats] if isinstance(stats, RegressorStatistics) else []

    def _offsets(self, theta: np.ndarray) -> np.ndarray | None:
        """Return the (6,) offsets of the estimate ``theta`` (None without ``bias``).

        The solved ones; with offsets per window, the line the newest window's residuals follow, at its
        newest sample."""
        if not self.with_bias:
            return None
        windowed = [s for s in self._statistics() if isinstance(s, WindowedStatistics)]
        if windowed:
            return current_offsets(windowed, theta[:N_PARAMS])
        return theta[N_PARAMS:].copy()

    def _fit_inputs(
        self,
    ) -> tuple[RegressorStatistics | None, np.ndarray | None, np.ndarray | None]:
        """Return what :func:`model_fit` needs: the statistics, their channel weights, and a fit.

        The fit is the unconstrained least-squares fit of the same data term when the estimator
        has a prior or constraints (else None). Default: no test."""
        return None, None, None

    @abc.abstractmethod
    def _accumulate(self, samples: SensorSamples) -> None: ...

    @abc.abstractmethod
    def _reset(self) -> None: ...

    @abc.abstractmethod
    def _solve(self) -> Solution: ...

