"""Which estimate the estimator node publishes, and when (ROS-free).

Every new finite estimate is published (:meth:`EstimatePublication.fresh`). While it cannot be updated
(an input silent for longer than ``stale_after_s``, the node not estimating, a rebuilt or reset stream
without an estimate yet, an estimate that is not finite), the last good one is published again at
``publish_rate_hz`` with ``stale: true`` and its ``age`` (:meth:`EstimatePublication.republish`); the
log says when the estimate becomes stale, why, and when it is current again. ``~/urdf_inertial`` is
republished only when :class:`~payload_estimator.supervision.publish_policy.RepublishPolicy` says so,
and only for an estimate that may be handed over
(:func:`~payload_estimator.outputs.handover.check_handover`): tools that build robot descriptions read it.

Times: ``now`` is the clock of the inputs' receive times (the monotonic clock in the node), s; an
estimate's ``age`` is s since it last took in new samples on that clock.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from payload_estimator.io.ros_factories import MessageFactory
from payload_estimator.outputs.handover import check_handover
from payload_estimator.outputs.urdf import urdf_inertial
from payload_estimator.pipeline.driver import SHORTEST_PROCESS_PERIOD_S
from payload_estimator.pipeline.stream import EstimationStream, StreamEstimate
from payload_estimator.supervision.node_outputs import Outputs
from payload_estimator.supervision.publish_policy import RepublishPolicy

__all__ = ["EstimatePublication"]


class EstimatePublication:
    """The estimates published so far: the last good one, whether it is stale, and when it was last new.

    Args:
        factory: makes the messages of the :class:`~payload_estimator.supervision.node_outputs.Outputs`.
        log: where staleness is logged (``info``, ``warning``).

    Attributes:
        last_output: the last good (finite) estimate published; kept across rebuilds and configuration
            errors, and republished with ``stale: true`` meanwhile.
        stream: the stream that made :attr:`last_output` (``~/apply`` hands over only an estimate of
            the running stream).
        stale: whether the estimate published last was stale; :attr:`stale_reason` says why.
    """

    def __init__(self, factory: MessageFactory, log: Any) -> None:
        self.factory = factory
        self.log = log
        self.last_output: StreamEstimate | None = None
        self.stream: EstimationStream | None = None
        self.stale = False
        self.stale_reason = ""
        self._urdf_policy = RepublishPolicy()
        self._published: Outputs | None = None  # the last outputs made from a new estimate (republished stale)
        self._published_at: float | None = None  # when anything was last published
        self._changes_reported = 0  # payload changes said (payload_changed) on ~/estimate so far
        self._fresh_at: float | None = None  # when last_output last took in new samples
        self._fresh_samples = -1  # its samples_used then

    def forget(self) -> None:
        """Forget every estimate (``~/reset``): nothing is republished until a new one is made."""
        self.last_output = None
        self._published = None
        self.stream = None
        self._fresh_at, self._fresh_samples = None, -1
        self.stale, self.stale_reason = False, ""
        self._urdf_policy.reset()

    def new_stream(self) -> None:
        """A stream was (re)built: its first estimate goes to ``~/urdf_inertial`` whatever was published before."""
        self._urdf_policy.reset()

    def age(self, now: float) -> float:
        """Seconds since the last good estimate took in new samples at ``now`` (0 without one)."""
        return max(0.0, now - self._fresh_at) if self._fresh_at is not None else 0.0

    def fresh(self, stream: EstimationStream, out: StreamEstimate, now: float, stale_reason: str) -> Outputs:
        """The outputs of a new estimate ``out`` of ``stream`` at ``now``.

        ``stale_reason`` says why the estimate cannot be updated at present ("" if it can): the outputs are
        then flagged stale.
        """
        if self.stream is not stream or out.estimate.samples_used != self._fresh_samples:
            self._fresh_at, self._fresh_samples = now, out.estimate.samples_used
        if self.stream is not stream:
            self._changes_reported = 0  # a new stream counts its own changes
        changes = out.tracking.changes if out.tracking is not None else 0
        payload_changed, self._changes_reported = changes > self._changes_reported, max(changes, self._changes_reported)
        self.last_output, self.stream = out, stream
        sensor = stream.config.sensor_frame
        flange = stream.config.flange_frame or sensor
        urdf = None
        if check_handover(out.estimate, inertia=True) and self._urdf_policy.should_publish(out.params_in_flange,
                                                                                           out.converged):
            urdf = urdf_inertial(out.params_in_flange, frame=flange)
        outputs = Outputs(out, sensor, flange, self.factory, stale=bool(stale_reason), age=self.age(now),
                          payload_changed=payload_changed, urdf_text=urdf)
        self._published = outputs
        self._note_published(now, stale_reason)
        return outputs

    def republish(self, now: float, reason: str, period_s: float) -> Outputs | None:
        """The last good estimate again, flagged stale because of ``reason``, every ``period_s``.

        Returns None when it is not due at ``now``, or when there is none.
        """
        last, out = self._published, self.last_output
        if last is None or out is None or last.result is not out:
            return None
        if self._published_at is not None and now < self._published_at + period_s - 0.5 * SHORTEST_PROCESS_PERIOD_S:
            return None
        outputs = replace(last, stale=True, age=self.age(now), payload_changed=False, urdf_text=None)
        self._note_published(now, reason)
        return outputs

    def _note_published(self, now: float, stale_reason: str) -> None:
        """Remember the time; log when the estimate becomes stale (with why) and when it is current again."""
        self._published_at = now
        stale = bool(stale_reason)
        if stale and not self.stale:
            self.log.warning(f"estimate stale ({stale_reason}): the last good estimate is republished "
                             "with stale: true until it can be updated")
        elif self.stale and not stale:
            self.log.info(f"estimate current again (it was stale for {self.age(now):.1f} s at most: "
                          f"{self.stale_reason})")
        self.stale, self.stale_reason = stale, stale_reason
