"""Following the payload through a work cycle: contacts are held out, payload changes restart.

Conventions: every vector in the sensor frame S; the wrench is the one the payload exerts on the
sensor (at rest ``f = m g``), SI units.

:class:`PayloadTracker` runs an estimator and keeps its books; whether a sample is what the
current payload explains, and whether a run of samples that is not is a new payload, is the
test of :class:`~payload_estimator.core.change_detection.ChangeDetector` (its residuals, the
gate :data:`GATE_CHI2`, the change fit). The current estimate is the detector's reference (for
an estimator other than least squares, the weighted least squares of the same samples is: a
prior that does not fit, or a recursive filter's start, would hold out the data that correct
it); a *suspect* sample is held out of the estimate.

A run of suspect samples is an *episode*. It ends after :data:`EPISODE_END_S` of normal samples
(and the filter's settling time: the contact's decay is still in them); its samples are then
dropped, as a *contact* (a bump, a push) when it stood far above the noise (:data:`CONTACT_CHI2`),
else as an outlier, and the estimate never saw them. Once an episode has lasted :data:`JUDGE_S`
with most of its samples suspect, it is judged: if a change of mass and first moment explains
its residuals, the payload has *changed*: the estimator restarts from where the filter has
settled on the new payload, keeping the F/T offsets it had found (they belong to the sensor, not
to the payload), and the flag is raised at once. Beside it the same estimator finds the offsets
anew; it takes over once it knows the mass well and sees the kept offsets wrong
(:func:`~payload_estimator.core.change_detection.offsets_moved`).
A force that no rigid body explains (a push sideways) stays a *contact* for as long as it lasts;
a persistent vertical contact (the object set down on a table while held) looks like a lighter
payload and ends as a change: either way it is flagged, never a silently wrong mass. Anything held
out for :data:`PERSISTENT_S` that no change explains (something leaning on the payload, an F/T
offset that jumped) becomes the new normal: the estimate restarts from it, offsets included, as a
change. Right after an input break (:meth:`PayloadTracker.input_break`), a constant step that no
payload change explains is the offsets having moved while the sensor was silent: an *offset*
shift, absorbed into the kept offsets.

A load that transfers over time (a grasp, a lift-off from a table) is fitted after it ends
(:meth:`~payload_estimator.core.change_detection.ChangeDetector.fit_transfer`): the new estimate
starts after the transfer and predicts nothing until it has :data:`REFERENCE_AFTER_S` of data and
has identified the mass; meanwhile every sample is taken (the new payload's own).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from payload_estimator.core.change_detection import (
    GATE_CHI2,
    ChangeDetector,
    ChangeFit,
    StepFilter,
    mass_known,
    offsets_moved,
)
from payload_estimator.core.estimators.base import Estimator, InsufficientData
from payload_estimator.core.estimators.least_squares import OrdinaryLeastSquares, WeightedLeastSquares
from payload_estimator.core.results import Estimate
from payload_estimator.core.samples import SensorSamples

__all__ = ["PayloadModel", "PayloadTracker", "TrackEvent", "TrackingCounts", "TrackingState", "CHANGE", "CONTACT",
           "OFFSET", "GATE_CHI2", "JUDGE_S"]

CHANGE = "change"
CONTACT = "contact"
OFFSET = "offset"

JUDGE_S = 0.3
"""An episode is judged (change or contact) once it has lasted this long ..."""
JUDGE_EVERY_S = 0.1
"""... and again after every this much more (a load transfer is decided soon after it ends)."""
SUSPECT_SHARE = 0.7
"""... with at least this share of its samples suspect."""
EPISODE_END_S = 0.05
"""An episode ends after this long of normal samples."""
REFERENCE_AFTER_S = 0.25
"""A new estimate gates and judges only after this much data (and the mass identified, or known
to :data:`~payload_estimator.core.change_detection.REFERENCE_MASS_STD_KG`)."""
REFRESH_S = 0.1
"""The reference estimate is refreshed after this much new accepted data ..."""
REFRESH_SHARE = 0.05
"""... or, once the estimate holds more, after this share of what it holds (a reference of 20 s of data
moves little in the next 0.1 s; an estimate costs the stream about 1 ms) ..."""
REFRESH_LONGEST_S = 1.0
"""... and at least after this much (offsets found anew take over within a second)."""
STEP_S = 0.05
"""The gate judges a batch in steps of about this much sample time, s (:meth:`PayloadTracker.update`): a
batch of the stream's turns (100 ms at the default estimate rate, ``pipeline.driver.PROCESS_PERIOD_S``), or
of a node that fell behind, is split so that its decisions are those of 50 ms turns."""
MAX_EPISODE_S = 5.0
"""Samples of a contact older than this are dropped from the episode (memory stays bounded)."""
PERSISTENT_S = 3.0
"""An episode held out this long, and no payload change, restarts the estimate (offsets too)."""
MIN_CONTACT_SAMPLES = 3
"""An episode with fewer suspect samples is an outlier (held out, not reported) ..."""
CONTACT_CHI2 = 43.34
"""... and so is one whose largest ``d²`` stays below this (chi-square, 6 dof, 1 - 1e-7): filtered
residuals cross the gate in runs, about once a minute; a contact stands far above (hundreds)."""
AFTER_BREAK_S = 0.5
"""An episode that begins within this much data after an input break may be an offset shift."""


class PayloadModel(Protocol):
    """What the robot pipeline asks of an estimator: an :class:`Estimator` or a :class:`PayloadTracker`."""

    @property
    def samples_used(self) -> int:
        """Samples the current estimate holds."""

    @property
    def rejected_samples(self) -> int:
        """Non-finite or absurd samples dropped so far."""

    @property
    def kinematic_noise(self) -> Any:
        """The estimator's :class:`~payload_estimator.core.estimators.base.KinematicNoise`."""

    def update(self, samples: SensorSamples) -> Any:
        """Take a batch of samples."""

    def estimate(self) -> Estimate:
        """The current estimate."""

    def reset(self) -> None:
        """Forget every sample."""

    def input_break(self) -> None:
        """The input broke off and resumed (a gap, a pause)."""


@dataclass(frozen=True)
class TrackEvent:
    """A detected payload change or contact: its kind, the time it began and was decided (s)."""

    kind: str
    t_start: float
    t_decided: float
    mass_change: float = float("nan")
    """kg, for a change: the fitted change of mass."""


@dataclass(frozen=True)
class TrackingState:
    """What a published estimate says about the following of the payload (a snapshot).

    Attributes:
        changes, contacts, held_out_samples: counts since the tracker started (see
            :class:`TrackingCounts`).
        contact: samples are being held out right now (a contact, or a change being judged).
        change_t: s, where the current payload's data begin (the last change's start); None before any.
    """

    changes: int = 0
    contacts: int = 0
    held_out_samples: int = 0
    contact: bool = False
    change_t: float | None = None


@dataclass
class TrackingCounts:
    """What the tracker has done so far."""

    changes: int = 0
    contacts: int = 0
    held_out_samples: int = 0
    """Samples never given to the estimator (contacts and isolated outliers)."""
    gated_samples: int = 0
    """Samples whose residual was implausible (suspect)."""
    outliers: int = 0
    """Episodes of fewer than :data:`MIN_CONTACT_SAMPLES` suspect samples (held out, not contacts)."""
    offset_shifts: int = 0
    """Offsets found shifted after an input break (a constant wrench step no payload explains)."""


@dataclass
class _Episode:
    """Suspect samples held out: when they began, their largest ``d²``, the batches with masks, last judged."""

    t_start: float
    peak: float = 0.0
    batches: list[SensorSamples] = field(default_factory=list)
    suspect: list[np.ndarray] = field(default_factory=list)
    last_judged: float = -np.inf

    def samples(self) -> SensorSamples:
        return SensorSamples.concatenate(self.batches)


class PayloadTracker:
    """An estimator that follows the payload: gates contacts, detects changes and restarts.

    Args:
        make_estimator: builds a fresh estimator; called with ``bias`` (estimate the F/T
            offsets): True at the start when ``bias``, False after a change (the offsets found
            so far are kept and subtracted).
        bias: estimate the F/T offsets.
        detect: detect changes and gate contacts (False: a plain estimator).
    """

    def __init__(self, make_estimator: Callable[[bool], Estimator], bias: bool = True, detect: bool = True) -> None:
        self._make = make_estimator
        self.bias = bool(bias)
        self.detect = bool(detect)
        self.estimator = make_estimator(self.bias)
        self._predictor = self._new_predictor(self.bias)
        self._free: tuple[Estimator, Estimator | None] | None = None
        self.offsets_in_sensor = np.zeros(6)
        """F/T offsets subtracted before the estimator (found before the last change)."""
        self.offsets_covariance = np.zeros((6, 6))
        """(6, 6) N², (N·m)²: the uncertainty of :attr:`offsets_in_sensor` when they were found."""
        self.offsets_found_t: float | None = None
        """s, the sample time they were found at (None: never, or estimated by the current estimator)."""
        self.offsets_drift_rate: np.ndarray | None = None
        """(6,) N/s and N·m/s: how fast the offsets moved between the last two times they were found (the first
        time: the slope of the line their window's residuals follow, :attr:`Estimate.bias_rate`)."""
        self._segment_t: float | None = None
        self.events: list[TrackEvent] = []
        self.counts = TrackingCounts()
        self._rejected_before = 0
        self._episode: _Episode | None = None
        self._normal_run_s = 0.0
        self._detector = ChangeDetector()
        self._since_refresh_s = 0.0
        self._data_s = 0.0
        self._last_t: float | None = None
        self._offsets_added = np.zeros(6)
        self._break_pending = False
        self._break_t: float | None = None

    @property
    def model_error(self) -> bool:
        """Whether the wrench carries a model's error (joint torques less a calibrated arm).

        Residuals correlated with the pose and the speed over seconds, which the detector judges changes against
        (:attr:`~payload_estimator.core.change_detection.ChangeDetector.model_error`)."""
        return self._detector.model_error

    @model_error.setter
    def model_error(self, value: bool) -> None:
        self._detector.model_error = bool(value)

    @property
    def step_response(self) -> StepFilter | None:
        """How a step of the wrench shows in the samples: set by the pipeline's filter; None: at once.

        The judge fits a change through it, from an onset it finds; the new payload's data start where it settled."""
        return self._detector.step_response

    @step_response.setter
    def step_response(self, response: StepFilter | None) -> None:
        self._detector.step_response = response

    # ------------------------------------------- what the pipeline asks of an estimator
    @property
    def samples_used(self) -> int:
        """Samples the current payload's estimate holds."""
        return self.estimator.samples_used

    @property
    def rejected_samples(self) -> int:
        """Non-finite samples the estimators dropped, over every payload (only ever grows)."""
        return self._rejected_before + self.estimator.rejected_samples

    @property
    def kinematic_noise(self) -> Any:
        """The estimator's :class:`~.estimators.base.KinematicNoise`, which every one after a change shares."""
        return self.estimator.kinematic_noise

    @property
    def with_bias(self) -> bool:
        """Whether the F/T offsets are estimated (kept across changes, found anew beside)."""
        return self.bias

    @property
    def last_solve_status(self) -> str:
        """The estimator's last solver status (PMD's QP), "" for the closed-form estimators."""
        return str(getattr(self.estimator, "last_solve_status", ""))

    @property
    def name(self) -> str:
        """The estimator's name (``pmd``...): the tracker is a way of running it."""
        return self.estimator.name

    def reset(self) -> None:
        """Start afresh (a new payload the caller knows of): the offsets are estimated again."""
        self._start_estimator(self.bias)
        self.offsets_in_sensor = np.zeros(6)
        self._forget_offsets()
        self.offsets_drift_rate = None
        self._last_t = None

    def _forget_offsets(self) -> None:
        """No offsets kept: their uncertainty and age go with them."""
        self.offsets_covariance = np.zeros((6, 6))
        self.offsets_found_t = None

    def _start_estimator(self, bias: bool) -> None:
        """Start a fresh estimator and wrench predictor for a new payload: only the kinematic noise is kept."""
        noise = self.estimator.kinematic_noise
        self._rejected_before += self.estimator.rejected_samples
        self.estimator = self._make(bias)
        self.estimator.kinematic_noise = noise
        self._predictor = self._new_predictor(bias)
        self._free = None
        if self.bias and not bias:
            # The kept offsets may drift (a strain gauge warms up): beside the estimate that trusts
            # them, the same estimator finds the offsets anew, and takes over if it sees them wrong.
            free = self._make(True)
            free.kinematic_noise = noise
            self._free = (free, self._new_predictor(True, free))
        self._episode = None
        self._detector.restart()
        self._data_s = 0.0
        self._since_refresh_s = 0.0

    def input_break(self) -> None:
        """Note that the input stopped and resumed (a gap, a clock jump); the time since the last sample restarts.

        An episode open across it is closed as it stands (held out: a contact, or an outlier)."""
        if self._episode is not None:
            self._close_as_contact(SensorSamples.empty(), np.zeros(0), self._episode_end())
        self._last_t = None
        self._break_pending = True
        for estimator in self._estimators():
            estimator.input_break()

    def _episode_end(self) -> float:
        """s, the last sample of the open episode (its start when it holds none)."""
        assert self._episode is not None
        batches = [b for b in self._episode.batches if len(b)]
        return float(batches[-1].t[-1]) if batches else self._episode.t_start

    # --------------------------------------------------------------------- state
    @property
    def contact(self) -> bool:
        """True while an episode is being held out as a contact."""
        return self._episode is not None

    @property
    def state(self) -> TrackingState:
        """A snapshot of what the tracker has done and is doing, for a published estimate."""
        changes = [e for e in self.events if e.kind == CHANGE]
        c = self.counts
        return TrackingState(c.changes, c.contacts, c.held_out_samples, self.contact,
                             changes[-1].t_start if changes else None)

    def kept_offsets_covariance(self) -> np.ndarray | None:
        """(6, 6) N², (N·m)²: how uncertain the kept offsets are for the current payload's data, or None.

        Their covariance when they were found (:attr:`Estimate.bias_covariance` of the estimate they came
        from), and the drift since: the rate they moved at between the last two times they were found, the
        first time their window's slope (:attr:`offsets_drift_rate`), over the time from then to the middle
        of the current payload's data, on each axis. None while the estimator finds the offsets itself, or
        none are kept."""
        if self.estimator.with_bias or not np.any(self.offsets_in_sensor):
            return None
        cov = np.array(self.offsets_covariance, dtype=float)
        if self.offsets_drift_rate is not None and self.offsets_found_t is not None and self._last_t is not None:
            start = self._segment_t if self._segment_t is not None else self.offsets_found_t
            age = max(0.5 * (start + self._last_t) - self.offsets_found_t, 0.0)
            cov += np.diag((self.offsets_drift_rate * age) ** 2)
        return cov

    def estimate(self) -> Estimate:
        """Return the current payload's estimate; its offsets are the kept ones plus any the estimator finds.

        Its covariance includes the kept offsets' uncertainty (:meth:`kept_offsets_covariance`): after a
        change, nothing in the first seconds of data tells an error of theirs from a mass."""
        self.estimator.kept_offsets_covariance = self.kept_offsets_covariance()
        try:
            est = self.estimator.estimate()
        finally:
            self.estimator.kept_offsets_covariance = None
        if self.bias and np.any(self.offsets_in_sensor):
            found = np.zeros(6) if est.bias is None else np.asarray(est.bias, dtype=float)
            est = replace(est, bias=self.offsets_in_sensor + found)
        return est

    # -------------------------------------------------------------------- intake
    def update(self, samples: SensorSamples) -> list[TrackEvent]:
        """Take a batch of samples (time-ordered); returns the events decided in it.

        A batch longer than :data:`STEP_S` is taken in steps of about that length (equal ones): the gate
        judges each step's samples against the detector as the steps before left it (its reference,
        refreshed by the data, and its running residuals), so a node whose turns are longer, or that fell
        behind and takes a larger batch, decides as one that kept up with the stream's turns."""
        if len(samples) > 1 and self.detect:
            span = float(samples.t[-1] - samples.t[0])
            steps = int(np.ceil(span / STEP_S - 0.5)) if np.isfinite(span) else 1
            if steps > 1:
                bounds = np.searchsorted(samples.t, samples.t[0] + np.arange(1, steps) * (span / steps))
                decided: list[TrackEvent] = []
                for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(samples)]):
                    if b > a:
                        decided += self._update(samples.select(slice(int(a), int(b))))
                return decided
        return self._update(samples)

    def _update(self, samples: SensorSamples) -> list[TrackEvent]:
        """:meth:`update` on one step's samples."""
        if len(samples) == 0:
            return []
        if self._break_pending:
            self._break_t, self._break_pending = float(samples.t[0]), False
        samples = self._corrected(samples)
        if not self.detect:
            self._feed(samples)
            return []
        dt = self._sample_periods(samples)
        d2 = self._detector.d2(samples)
        if d2 is None:  # no estimate to judge by yet (the start, or just after a change): take all
            self._feed(samples)
            return []
        decided: list[TrackEvent] = []
        start = 0
        for i in range(len(samples)):
            suspect = bool(d2[i] > GATE_CHI2)
            if suspect:
                self.counts.gated_samples += 1
            if self._episode is None:
                if not suspect:
                    continue
                self._feed(samples.select(slice(start, i)))
                start = i
                self._episode = _Episode(float(samples.t[i]), float(d2[i]))
                self._normal_run_s = 0.0
                continue
            # inside an episode
            self._normal_run_s = 0.0 if suspect else self._normal_run_s + dt[i]
            if self._normal_run_s >= max(EPISODE_END_S, self._detector.settled_s):
                ended = self._close_as_contact(samples.select(slice(start, i + 1)), d2[start : i + 1],
                                               float(samples.t[i]))
                start = i + 1
                if ended is not None:
                    decided.append(ended)
                continue
            t_now = float(samples.t[i])
            if t_now - self._episode.t_start >= JUDGE_S and t_now - self._episode.last_judged >= JUDGE_EVERY_S:
                self._episode.batches.append(samples.select(slice(start, i + 1)))
                self._episode.suspect.append(d2[start : i + 1] > GATE_CHI2)
                self._episode.peak = max(self._episode.peak, float(np.max(d2[start : i + 1])))
                start = i + 1
                event = self._judge(t_now)
                if event is not None:
                    decided.append(event)
                    # the rest of this batch belongs to the new payload, not yet predicted; it was
                    # corrected with the offsets before the change
                    rest = samples.select(slice(start, None))
                    self._feed(replace(rest, wrench_in_sensor=rest.wrench_in_sensor - self._offsets_added))
                    return decided
        if self._episode is None:
            self._feed(samples.select(slice(start, None)))
        elif start < len(samples):
            self._episode.batches.append(samples.select(slice(start, None)))
            self._episode.suspect.append(d2[start:] > GATE_CHI2)
            self._episode.peak = max(self._episode.peak, float(np.max(d2[start:])))
            self._trim_episode()
        return decided

    # ------------------------------------------------------------------ internals
    def _corrected(self, samples: SensorSamples) -> SensorSamples:
        """``samples`` less the kept offsets."""
        if not np.any(self.offsets_in_sensor):
            return samples
        return replace(samples, wrench_in_sensor=samples.wrench_in_sensor - self.offsets_in_sensor)

    def _sample_periods(self, samples: SensorSamples) -> np.ndarray:
        """(n,) s from each sample to the one before (the batch before's last for the first)."""
        t = samples.t
        previous = t[0] if self._last_t is None else self._last_t
        dt = np.diff(np.r_[previous, t])
        self._last_t = float(t[-1])
        if len(dt) > 1 and dt[1:].min() > 0.0 and dt[0] > 0.0:
            return dt
        positive = dt[dt > 0]
        return np.where(dt > 0, dt, float(np.median(positive)) if positive.size else 0.01)

    def _new_predictor(self, bias: bool, estimator: Estimator | None = None) -> Estimator | None:
        """Return the estimator that predicts the wrench for the gate.

        Least squares itself, or beside any other estimator, weighted least squares on the same samples. A
        prior that does not fit the payload (PMD's uniform density in a shape) mispredicts dynamic samples,
        and a recursive filter's first estimates (RLS, RTLS) are pulled by their initial state yet claim to
        be known: either way the gate would hold out the very data that should correct them."""
        estimator = self.estimator if estimator is None else estimator
        if isinstance(estimator, OrdinaryLeastSquares):  # wls, ols: their own predictors
            return None
        predictor = WeightedLeastSquares(bias=bias)
        predictor.kinematic_noise = estimator.kinematic_noise
        return predictor

    def payload_estimators(self) -> list[Estimator]:
        """The current payload's estimators: the estimate's, and the one finding the offsets anew beside it."""
        return [self.estimator, *(self._free[:1] if self._free else ())]

    def _estimators(self) -> list[Estimator]:
        """Every estimator the samples go to: the estimate's, the predictor, the one finding the offsets anew."""
        return [e for e in (self.estimator, self._predictor, *(self._free or ())) if e is not None]

    def _judge_by(self) -> Estimator:
        """The estimator whose estimate the detector judges by (:meth:`_new_predictor`)."""
        return self.estimator if self._predictor is None else self._predictor

    def _feed(self, samples: SensorSamples) -> None:
        """Give accepted samples to the estimators (and their residuals to the detector)."""
        if len(samples) == 0:
            return
        self._detector.learn(samples)
        for estimator in self._estimators():
            estimator.update(samples)
        step = float(np.median(np.diff(samples.t))) if len(samples) > 1 else 0.01
        span = float(samples.t[-1] - samples.t[0]) + step
        self._data_s += span
        self._since_refresh_s += span
        due_s = min(max(REFRESH_S, REFRESH_SHARE * self._data_s), REFRESH_LONGEST_S)
        if self._detector.reference is None or self._since_refresh_s >= due_s:
            self._refresh()

    def _refresh(self) -> None:
        """A new reference for the detector: the current estimate, once there is enough data."""
        self._since_refresh_s = 0.0
        if self._data_s < REFERENCE_AFTER_S:
            self._detector.set_reference(None)
            return
        try:
            est = self._judge_by().estimate()
            if self._free_takes_over(est):
                est = self._judge_by().estimate()
        except (InsufficientData, ValueError, ArithmeticError, np.linalg.LinAlgError):
            self._detector.set_reference(None)
            return
        self._detector.set_reference(est)

    def _free_takes_over(self, kept: Estimate) -> bool:
        """Let the estimator that finds the offsets anew take over once it sees the kept ones wrong.

        It sees them wrong when its mass and first moment differ from those of ``kept`` (the judge's
        estimate, which trusts them) by more than their uncertainty allows (:data:`OFFSETS_MOVED_CHI2`).
        The offsets it finds are added to the kept ones (see :meth:`estimate`). While the kept offsets
        hold, the estimate that trusts them stays: it is the more precise. Returns whether it took over."""
        if self._free is None:
            return False
        free, predictor = self._free
        try:
            if not offsets_moved((free if predictor is None else predictor).estimate(), kept):
                return False
            # an estimator with a prior (PMD) takes over only once it sees it too (one solve), where it
            # can tell: at its mass bound (an empty gripper) it has no covariance, or none that tells the
            # offsets from a mass, and the least-squares estimates beside it judge alone
            if predictor is not None:
                found, kept_by_prior = free.estimate(), self.estimator.estimate()
                can_tell = (found.covariance is not None and kept_by_prior.covariance is not None
                            and not (found.identification.empty or kept_by_prior.identification.empty))
                if can_tell and not offsets_moved(found, kept_by_prior):
                    return False
        except (InsufficientData, ValueError, ArithmeticError, np.linalg.LinAlgError):
            return False
        self._rejected_before += self.estimator.rejected_samples
        self.estimator, self._predictor, self._free = free, predictor, None
        return True

    def _close_as_contact(self, tail: SensorSamples, d2_tail: np.ndarray, t_end: float) -> TrackEvent | None:
        """Close the episode as a contact: its samples (with ``tail``) are dropped.

        The trailing normal samples go to the estimator once the filter has settled after the
        last suspect one (until then they still carry the contact's decay, below the gate)."""
        assert self._episode is not None
        normal_tail = int(np.argmax((d2_tail > GATE_CHI2)[::-1])) if np.any(d2_tail > GATE_CHI2) else len(d2_tail)
        n_tail = len(tail)
        held = n_tail - normal_tail + sum(len(b) for b in self._episode.batches)
        self.counts.held_out_samples += held
        event = None
        suspects = int(sum(int(np.sum(s)) for s in self._episode.suspect) + np.sum(d2_tail > GATE_CHI2))
        peak = max(self._episode.peak, float(np.max(d2_tail)) if len(d2_tail) else 0.0)
        if suspects < MIN_CONTACT_SAMPLES or peak < CONTACT_CHI2:  # an isolated outlier is no contact
            self.counts.outliers += 1
        else:
            self.counts.contacts += 1
            event = TrackEvent(CONTACT, self._episode.t_start, t_end)
            self.events.append(event)
        suspect_t = [b.t[m] for b, m in zip(self._episode.batches, self._episode.suspect)]
        suspect_t.append(tail.t[d2_tail > GATE_CHI2])
        last = max((float(x.max()) for x in suspect_t if x.size), default=-np.inf)
        self._episode = None
        rest = tail.select(slice(n_tail - normal_tail, None))
        clean = rest.t >= last + self._detector.settled_s - 1e-9
        self.counts.held_out_samples += int(np.sum(~clean))
        self._feed(rest.select(clean))
        return event

    def _trim_episode(self) -> None:
        """Drop the open episode's oldest batches beyond :data:`MAX_EPISODE_S` (held out)."""
        ep = self._episode
        assert ep is not None
        while len(ep.batches) > 1 and float(ep.batches[-1].t[-1] - ep.batches[0].t[-1]) > MAX_EPISODE_S:
            dropped = ep.batches.pop(0)
            ep.suspect.pop(0)
            self.counts.held_out_samples += len(dropped)

    def _judge(self, t_now: float) -> TrackEvent | None:
        """Change or contact? (See the module docstring.) Returns the change, or None."""
        ep = self._episode
        assert ep is not None and self._detector.reference is not None
        ep.last_judged = t_now
        suspect = np.concatenate(ep.suspect)
        if suspect.mean() < SUSPECT_SHARE:
            return None
        samples = ep.samples()
        if t_now - ep.t_start >= PERSISTENT_S:
            # Held out this long and no rigid body explains it: whatever it is (something leaning
            # on the payload, an offset that drifted), it is the new normal. Start again from it,
            # offsets included, and say so: never a silently frozen or wrong estimate.
            return self._restart(samples, ep.t_start, t_now, float("nan"), keep_offsets=False)
        fit = self._detector.fit_change(samples, ep.t_start)
        if fit is None:
            return None
        if not (fit.explains and self._detector.settled_on_step(samples, fit)):
            transfer = self._detector.fit_transfer(samples, ep.t_start)
            if transfer is not None:  # the load moved over in its own time: the new data begin after it
                return self._restart(samples.select(samples.t >= transfer.data_from - 1e-9), transfer.onset,
                                     t_now, float(transfer.delta[0]))
            if self._break_t is not None and ep.t_start - self._break_t <= AFTER_BREAK_S:
                return self._offset_shift(samples, fit, ep.t_start, t_now)
            return None
        # the new payload's data: from where the filter has settled on it
        settled = samples.select(samples.t >= fit.onset + self._detector.settled_s - 1e-9)
        return self._restart(settled, fit.onset, t_now, float(fit.delta[0]))

    def _keep_offsets(self, est: Estimate, t_found: float) -> None:
        """Keep the offsets ``est`` found (added to those kept before), with their uncertainty and drift rate.

        ``t_found``: s, where the data they were found from end (the change's start)."""
        assert est.bias is not None
        previous, previous_t = self.offsets_in_sensor.copy(), self.offsets_found_t
        self._offsets_added = np.asarray(est.bias, dtype=float)
        self.offsets_in_sensor = self.offsets_in_sensor + self._offsets_added
        if previous_t is not None and t_found - previous_t > 1.0:
            self.offsets_drift_rate = np.abs(self.offsets_in_sensor - previous) / (t_found - previous_t)
        elif est.bias_rate is not None and np.all(np.isfinite(est.bias_rate)):
            self.offsets_drift_rate = np.abs(np.asarray(est.bias_rate, dtype=float))  # the first: the window's line
        cov = est.bias_covariance
        self.offsets_covariance = (np.zeros((6, 6)) if cov is None or not np.all(np.isfinite(cov))
                                   else np.array(cov, dtype=float))
        self.offsets_found_t = float(t_found)

    def _offset_shift(self, samples: SensorSamples, fit: ChangeFit, t_start: float,
                      t_now: float) -> TrackEvent | None:
        """Absorb a step of the wrench right after an input break into the kept offsets.

        A constant step that no payload change explains means the sensor's offsets moved while it
        was silent (drift, a driver restarted). The step is added to the kept offsets, and the
        episode's samples go to the estimator. None when no such step fits."""
        found = self._detector.fit_offset_shift(samples, fit, t_start)
        if found is None:
            return None
        shift, onset = found
        self._break_t = None
        self._offsets_added = shift
        self.offsets_in_sensor = self.offsets_in_sensor + shift
        settled = samples.select(samples.t >= onset + self._detector.settled_s - 1e-9)
        held = len(samples) - len(settled)
        self.counts.held_out_samples += held
        self.counts.offset_shifts += 1
        self._episode = None
        event = TrackEvent(OFFSET, float(onset), t_now)
        self.events.append(event)
        self._feed(replace(settled, wrench_in_sensor=settled.wrench_in_sensor - shift))
        return event

    def _restart(
        self, samples: SensorSamples, t_start: float, t_now: float, mass_change: float, keep_offsets: bool = True
    ) -> TrackEvent:
        """Restart for a change at ``t_start`` (decided at ``t_now``), s: a fresh estimator from ``samples``.

        The offsets found so far are kept and subtracted (``keep_offsets``) or estimated again."""
        self._offsets_added = np.zeros(6)
        if not keep_offsets and np.any(self.offsets_in_sensor):
            # estimate the offsets again: put back the ones subtracted so far
            samples = replace(samples, wrench_in_sensor=samples.wrench_in_sensor + self.offsets_in_sensor)
            self._offsets_added = -self.offsets_in_sensor
            self.offsets_in_sensor = np.zeros(6)
            self._forget_offsets()
        elif keep_offsets and self.estimator.with_bias:
            try:
                est = self._judge_by().estimate(offsets_uncertainty=True)
                if est.bias is not None and mass_known(est):
                    self._keep_offsets(est, t_start)
                    samples = replace(samples, wrench_in_sensor=samples.wrench_in_sensor - self._offsets_added)
            except (InsufficientData, ValueError, ArithmeticError, np.linalg.LinAlgError):
                pass
        self._segment_t = t_start
        self._start_estimator(self.bias and not np.any(self.offsets_in_sensor))
        event = TrackEvent(CHANGE, t_start, t_now, mass_change)
        self.events.append(event)
        self.counts.changes += 1
        self._feed(samples)
        return event

