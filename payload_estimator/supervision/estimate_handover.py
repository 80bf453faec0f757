"""The estimate handed over by the estimator node's services, ROS-free.

The services are ``~/save_urdf`` (an ``<inertial>`` element) and ``~/apply``
(what is sent to the robot or filter). Whether an estimate may be handed over
at all is :func:`~payload_estimator.outputs.handover.check_handover`'s decision
(``force`` hands over one it refuses softly, marked as forced); the request for the robot or
filter is :func:`~payload_estimator.outputs.apply.build_apply_request`'s. The robot bridge
(:mod:`payload_estimator.ros.robot_bridges`) only sends it. Units SI; an ``<inertial>`` is in the frame
it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from payload_estimator.files import write_text_atomic
from payload_estimator.outputs.apply import ApplyRequest, build_apply_request
from payload_estimator.outputs.handover import check_handover
from payload_estimator.outputs.urdf import urdf_inertial
from payload_estimator.pipeline.stream import EstimationStream, StreamEstimate
from payload_estimator.settings import Settings

__all__ = ["SavedUrdf", "ApplyDecision", "save_urdf", "apply_decision"]


@dataclass(frozen=True)
class SavedUrdf:
    """``~/save_urdf``'s answer: ``urdf`` is the ``<inertial>`` element ("" on failure)."""

    success: bool
    message: str
    urdf: str = ""


@dataclass(frozen=True)
class ApplyDecision:
    """``~/apply``'s answer, or the request to send first.

    Attributes:
        success, message: the answer (when ``send`` is None).
        request: the request as YAML ("" when there is none).
        send: the request to send to the robot or filter; the answer is then what sending it gives.
        estimate: the estimate the request was built from (None: refused).
    """

    success: bool
    message: str
    request: str = ""
    send: ApplyRequest | None = None
    estimate: StreamEstimate | None = None


def save_urdf(out: StreamEstimate, stream: EstimationStream, frame: str = "", path: str = "",
              force: bool = False) -> SavedUrdf:
    """``~/save_urdf``: the ``<inertial>`` of ``out`` in ``frame``, written to ``path`` if given.

    Refused when the estimate may not be handed over (:func:`check_handover`), unless ``force``.

    Args:
        out: an estimate of ``stream``.
        stream: the stream that made it (its frames and kinematics).
        frame: "" or "flange": the flange; "sensor": the sensor frame; or any frame fixed to them.
        path: the file to write ("" writes none).
        force: hand over an estimate the checks refuse softly (marked as forced).
    """
    handover = check_handover(out.estimate, inertia=True, force=force)
    if not handover:
        return SavedUrdf(False, "refused: " + "; ".join(handover.reasons)
                         + ("" if handover.hard else " (force: true writes it anyway, marked)"))
    frame = frame or "flange"
    sensor = stream.config.sensor_frame
    try:
        if frame == "flange":
            frame, params = stream.config.flange_frame or sensor, out.params_in_flange
        elif frame in ("sensor", sensor):
            frame, params = sensor, out.estimate.params
        else:
            R, p = stream.kinematics.rigid_pose(sensor, frame)  # the sensor frame in ``frame``
            params = out.estimate.params.transformed(R, p)
    except ValueError as exc:
        return SavedUrdf(False, str(exc))
    text = urdf_inertial(params, frame=frame, note=f"FORCED: {'; '.join(handover.reasons)}" if handover.forced else "")
    message = f"inertial of the payload in {frame}" + (" (forced: " + "; ".join(handover.reasons) + ")"
                                                      if handover.forced else "")
    if path:
        target = Path(path).expanduser()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, text + "\n")
        except OSError as exc:
            return SavedUrdf(False, f"cannot write {target}: {exc}", text)
        message += f", written to {target}"
    if not out.converged:
        message += f" (not converged: {out.reason})"
    return SavedUrdf(True, message, text)


def apply_decision(settings: Settings, out: StreamEstimate | None, force: bool = False,
                   dry_run: bool = False) -> ApplyDecision:
    """What ``~/apply`` does with ``out``: refuse, answer a dry run with the request, or say what to send.

    Args:
        settings: the node's settings (the apply target and its services).
        out: the estimate (None: no estimate).
        force: send an estimate the checks refuse softly.
        dry_run: only answer with the request.
    """
    request, reason = build_apply_request(settings, out, force)
    if request is None:
        return ApplyDecision(False, f"refused: {reason}")
    text = request.to_yaml()
    if dry_run:
        return ApplyDecision(True, f"dry run, not sent ({reason})", text, estimate=out)
    return ApplyDecision(False, f"not sent yet ({reason})", text, send=request, estimate=out)
