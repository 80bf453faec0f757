"""Property-based fuzzing of the estimation stream, the ROS message layer and the estimators.

Random sequences of joint-state, wrench and IMU input go into streams built by
``pipeline.build.build_stream`` on the package's own URDFs, with real estimators
(PMD on OSQP, WLS, RTLS, RLS): real ``rosbags`` message objects through
``io.ros_inbound.feed``/``feed_many``, or arrays through ``push_joint_states``,
``push_wrench`` and ``push_imu``. The input is a clean 1 kHz recording (smooth joint
motion, a smooth wrench, an IMU where the stream uses one) spoilt at random places:
NaN/inf, huge and denormal values, empty, short and long arrays, permuted, unknown,
missing and repeated joint names, duplicate, reversed, far-future, negative, zero
and non-finite stamps, frames that do not exist, unreadable fields, malformed array
shapes; interleaved with ``process()``, ``update_estimate()``, ``reset()``, pause
and resume, ``finish()`` and ``diagnostics()``.

Invariants, checked after every call:

* nothing raises out of the stream or the message layer;
* every published estimate is finite, and PMD's is physically consistent (or the
  empty payload, all point masses zero);
* every input is accounted for: per call and per stream, what was sent = what the
  stream took (its health's sample counter) + what it counted as dropped where it
  enters (by reason); what the aligner then drops (NaN/inf, out of range, duplicate,
  late, overflowing) never exceeds what it took.

The estimators alone get the same treatment with adversarial ``SensorSamples``:
whatever updates came before, ``estimate()`` gives ``InsufficientData`` or a finite
estimate (PMD's physically consistent), never another exception.

CI runs each property on a fixed set of examples (``derandomize=True``: the same
examples on every run, so CI cannot flake); ``benchmarks/fuzz_campaign.py`` runs the
same properties (:data:`PROPERTIES`) on at least 10,000 generated cases.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payload_estimator.core.estimators import ESTIMATORS, InsufficientData
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.shapes import parse_shape_spec, sample_points
from payload_estimator.io import ros_inbound
from payload_estimator.io import ros_outbound as outbound
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.io.ros_factories import rosbags_factory
from payload_estimator.pipeline.build import build_stream, builtin_description
from payload_estimator.pipeline.health import (
    BUFFER_OVERFLOW,
    DUPLICATE_STAMP,
    LENGTH_MISMATCH,
    MISSING_JOINT,
    NON_FINITE,
    OUT_OF_RANGE,
    SATURATED,
    TOO_LATE,
    UNKNOWN_JOINT,
    WRONG_FRAME,
    InputHealth,
)
from payload_estimator.pipeline.stream import IMU, JOINTS, WRENCH, EstimationStream
from payload_estimator.settings import settings_for_robot

CI = settings(
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
)
"""CI's profile: a fixed set of examples (derandomised), no database, no deadline (2 shared cores)."""

KINDS = (JOINTS, WRENCH, IMU)
_MESSAGE_DROPS = frozenset({
    LENGTH_MISMATCH, MISSING_JOINT, UNKNOWN_JOINT, WRONG_FRAME, SATURATED, ros_inbound.MALFORMED,
    ros_inbound.IMU_FIELD_ABSENT,
})
ENTRY_DROPS = {
    JOINTS: _MESSAGE_DROPS,
    WRENCH: _MESSAGE_DROPS | {NON_FINITE, OUT_OF_RANGE},  # before the saturation check
    IMU: _MESSAGE_DROPS,
}
"""Reasons for which a message of each stream is dropped where it enters the stream (not taken)."""
LATER_DROPS = (NON_FINITE, OUT_OF_RANGE, DUPLICATE_STAMP, TOO_LATE, BUFFER_OVERFLOW)
"""Reasons for which the aligner drops a sample the stream took."""

NAN, INF = math.nan, math.inf
SPECIAL = (NAN, INF, -INF, 1e308, -1e308, 1e300, 1e154, -1e154, 1e20, 1e6, -1e6, 5e-324, -0.0)
bad_floats = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True))
"""Values nobody should send: non-finite, huge, denormal (and any float at all)."""


# ------------------------------------------------------------------ streams


@dataclass(frozen=True)
class StreamCase:
    """How to build one of the fuzzed streams."""

    robot: str
    overrides: tuple[tuple[str, Any], ...] = ()
    zero_phase: bool = False


STREAMS: dict[str, StreamCase] = {
    # Franka: the external wrench in the stiffness frame (sign -1), PMD on OSQP
    "panda_pmd": StreamCase("panda"),
    # motion from an IMU on the flange, RTLS with F/T offsets
    "fr3_imu_rtls": StreamCase("fr3", (("estimator", "rtls"), ("motion_source", "imu"), ("imu_frame", "fr3_link8"))),
    # a raw F/T sensor with its range (saturation check), the driver's joint velocities, WLS
    "xarm7_ft_velocities_wls": StreamCase("xarm7", (("estimator", "wls"), ("use_joint_velocities", True))),
    # a recording filtered forward and backward at finish(), RLS
    "xarm6_zero_phase_rls": StreamCase("xarm6", (("estimator", "rls"),), zero_phase=True),
}


@functools.cache
def _settings_and_urdf(name: str):
    case = STREAMS[name]
    s = settings_for_robot(case.robot, **dict(case.overrides))
    return s, builtin_description(s)


def make_stream(name: str) -> EstimationStream:
    """A fresh stream of the named case (about 10 ms: pinocchio model, estimator, filters).

    Its warnings go to a silent logger: thousands of examples would flood the test log.
    """
    s, urdf = _settings_and_urdf(name)
    expected = [JOINTS, WRENCH] + ([IMU] if s.motion_source == "imu" else [])
    health = InputHealth(expected_streams=expected, logger=_SILENT)
    return build_stream(s, urdf, zero_phase=STREAMS[name].zero_phase, health=health)


_SILENT = logging.getLogger("payload_estimator_fuzz")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


@functools.cache
def message_factory():
    return rosbags_factory(ros_typestore())


# ----------------------------------------------------------------- programs
#
# A program is a clean recording (ops in arrival order) with spoilt entries and
# control calls inserted; the executors run it through messages or arrays.


@dataclass
class Op:
    """One input or control call. ``kind``: joint_states, wrench, imu, or a control name."""

    kind: str
    t: float = 0.0
    wall: float | None = None
    names: list[str] = field(default_factory=list)
    q: list[float] = field(default_factory=list)
    dq: list[float] = field(default_factory=list)
    frame: str = ""
    v1: list[float] = field(default_factory=list)  # force / gyro
    v2: list[float] = field(default_factory=list)  # torque / specific force
    raw_stamp: tuple[Any, Any] | None = None  # (sec, nanosec) as given, for the message path
    malformed: str = ""  # how a message is unreadable (message path); array shape spoilers (array path)
    covariance_absent: str = ""  # IMU: "gyro" or "accel"
    spoilt: bool = False

    def __repr__(self) -> str:  # hypothesis prints programs: keep them readable
        if self.kind not in KINDS:
            return f"Op({self.kind!r})"
        parts = [f"{self.kind} t={self.t!r}"]
        for name in ("wall", "raw_stamp", "malformed", "covariance_absent"):
            if getattr(self, name):
                parts.append(f"{name}={getattr(self, name)!r}")
        if self.kind == JOINTS:
            parts.append(f"names={self.names!r} q={self.q!r}" + (f" dq={self.dq!r}" if self.dq else ""))
        else:
            parts.append(f"frame={self.frame!r} {self.v1!r} {self.v2!r}")
        return "Op(" + ", ".join(parts) + ")"


@dataclass
class Program:
    stream: str
    ops: list[Op]
    batch: int  # message path: 1 = feed() one by one, else feed_many() in chunks of this size
    seed: int = 0

    def __repr__(self) -> str:
        spoilt = [(i, op) for i, op in enumerate(self.ops) if op.kind not in KINDS or op.spoilt]
        return f"Program(stream={self.stream!r}, batch={self.batch}, ops={len(self.ops)}, spoilt/controls={spoilt!r})"


CONTROLS = ("process", "update", "reset", "pause", "resume", "finish", "diagnostics")
CONTROL_DRAWS = ("process",) * 4 + ("update",) * 4 + CONTROLS[2:]
"""Controls as drawn: mostly process and update (a reset or a pause leaves little to publish)."""

JOINT_SPOILERS = (
    "value", "all_values", "short", "long", "empty", "permute", "extra_joint", "missing_joint",
    "duplicate_name", "unknown_name", "velocity_short", "velocity_value", "malformed",
)
WRENCH_SPOILERS = ("value", "frame", "malformed")
IMU_SPOILERS = ("value", "frame", "covariance_absent", "malformed")
STAMP_SPOILERS = ("duplicate", "reversed", "future", "zero", "negative", "non_finite", "nanosec_overflow",
                  "huge_int")
JOINT_MALFORMED = ("position_none", "position_strings", "position_huge_int", "name_none", "header_none",
                   "message_none", "sec_string", "velocity_strings")
WRENCH_MALFORMED = ("wrench_none", "force_string", "force_huge_int", "header_none", "message_none", "frame_none")
IMU_MALFORMED = ("gyro_none", "accel_string", "header_none", "message_none", "covariance_none")
HUGE_INT = 10**400
"""An integer no float can hold (a field a broken bridge filled with garbage)."""
ARRAY_SPOILERS = ("rows_2", "cube", "stamps_2d", "stamps_short", "stamps_long", "columns_short", "scalar_values")


def _clean_ops(stream_name: str, n: int, wrench_every: int, imu_every: int, t0: float, seed: int) -> list[Op]:
    """A clean recording: joint states at 1 kHz, the wrench every ``wrench_every`` ms, the IMU likewise."""
    s, _ = _settings_and_urdf(stream_name)
    stream = _reference_stream(stream_name)
    names = list(stream.joint_names)
    k = len(names)
    rng = np.random.default_rng(seed)
    amp, phase = rng.uniform(0.1, 0.6, k), rng.uniform(0, 2 * np.pi, k)
    q0 = rng.uniform(-1.0, 1.0, k)
    freq = rng.uniform(0.3, 1.5)
    w0 = np.r_[rng.normal(0, 3.0, 3), rng.normal(0, 0.3, 3)]  # within an xArm F/T sensor's range
    w_amp = np.r_[rng.uniform(0.1, 2.0, 3), rng.uniform(0.05, 0.3, 3)]
    frame = stream.wrench_convention.expressed_in
    imu_frame = s.imu_frame or ""
    ops: list[Op] = []
    for i in range(n):
        dt = i * 1e-3
        t = t0 + dt
        wall = 100.0 + dt
        arg = 2 * np.pi * freq * dt + phase
        q = (q0 + amp * np.sin(arg)).tolist()
        dq = (amp * 2 * np.pi * freq * np.cos(arg)).tolist()
        ops.append(Op(JOINTS, t, wall, names=list(names), q=q, dq=dq))
        if i % wrench_every == 0:
            w = w0 + w_amp * np.sin(2 * np.pi * freq * dt + np.arange(6))
            ops.append(Op(WRENCH, t + 2e-4, wall, frame=frame, v1=w[:3].tolist(), v2=w[3:].tolist()))
        if stream.imu_mount is not None and i % imu_every == 0:
            gyro = (0.3 * np.sin(2 * np.pi * freq * dt + np.arange(3))).tolist()
            accel = [0.1 * math.sin(dt), 0.0, 9.81]
            ops.append(Op(IMU, t + 4e-4, wall, frame=imu_frame, v1=gyro, v2=accel))
    return ops


@functools.cache
def _reference_stream(name: str) -> EstimationStream:
    """A stream only looked at (joint names, frames), never fed."""
    return make_stream(name)


def _spoil(draw, op: Op, previous: dict[str, float], stream: EstimationStream) -> None:
    """Spoil ``op`` in place with one drawn fault."""
    op.spoilt = True
    if draw(st.booleans()):  # a stamp fault
        how = draw(st.sampled_from(STAMP_SPOILERS))
        if how == "duplicate":
            op.t = previous.get(op.kind, op.t)
        elif how == "reversed":
            op.t -= draw(st.sampled_from([1e-4, 5e-3, 0.03, 0.5, 2.0, 1e3]))
        elif how == "future":
            op.t += draw(st.sampled_from([0.5, 2.0, 1e3, 1e9, 1e300, 1.7e308]))
        elif how == "zero":
            op.t = 0.0
            op.wall = draw(st.sampled_from([None, op.wall]))
        elif how == "negative":
            op.t = -op.t
        elif how == "non_finite":
            op.t = draw(st.sampled_from([NAN, INF, -INF]))
        elif how == "nanosec_overflow":
            sec = math.floor(op.t)
            op.raw_stamp = (sec, 4_000_000_000)
            op.t = sec + 4.0
        elif how == "huge_int":
            op.raw_stamp = (HUGE_INT, 0)
            op.t = INF
        if not draw(st.booleans()):
            return
    if op.kind == JOINTS:
        how = draw(st.sampled_from(JOINT_SPOILERS))
        k = len(op.q)
        if how == "value":
            op.q[draw(st.integers(0, k - 1))] = draw(bad_floats)
        elif how == "all_values":
            op.q = [draw(bad_floats)] * k
        elif how == "short":
            op.q = op.q[:-1]
        elif how == "long":
            op.q = op.q + [0.1]
        elif how == "empty":
            op.names, op.q, op.dq = [], [], []
        elif how == "permute":
            order = draw(st.permutations(range(k)))
            op.names = [op.names[i] for i in order]
            op.q = [op.q[i] for i in order]
            op.dq = [op.dq[i] for i in order]
        elif how == "extra_joint":
            at = draw(st.integers(0, k))
            op.names.insert(at, draw(st.sampled_from(["gripper_finger_joint", "panda_finger_joint1", ""])))
            op.q.insert(at, draw(st.one_of(st.just(0.04), bad_floats)))
            op.dq.insert(at, 0.0)
        elif how == "missing_joint":
            j = draw(st.integers(0, k - 1))
            del op.names[j], op.q[j], op.dq[j]
        elif how == "duplicate_name":
            i, j = draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
            op.names[i] = op.names[j]
        elif how == "unknown_name":
            op.names[draw(st.integers(0, k - 1))] = draw(st.sampled_from(["no_such_joint", "", "joint1 "]))
        elif how == "velocity_short":
            op.dq = op.dq[:-1]
        elif how == "velocity_value":
            op.dq[draw(st.integers(0, k - 1))] = draw(bad_floats)
        elif how == "malformed":
            op.malformed = draw(st.sampled_from(JOINT_MALFORMED + ARRAY_SPOILERS))
    elif op.kind == WRENCH:
        how = draw(st.sampled_from(WRENCH_SPOILERS))
        if how == "value":
            vec = draw(st.sampled_from(["v1", "v2"]))
            getattr(op, vec)[draw(st.integers(0, 2))] = draw(bad_floats)
        elif how == "frame":
            expected = stream.wrench_convention.expressed_in
            op.frame = draw(st.sampled_from(
                ["no_such_frame", "/" + expected, "", stream.kinematics.base_frame, expected + " ", "world"]))
        else:
            op.malformed = draw(st.sampled_from(WRENCH_MALFORMED + ARRAY_SPOILERS))
    else:
        how = draw(st.sampled_from(IMU_SPOILERS))
        if how == "value":
            vec = draw(st.sampled_from(["v1", "v2"]))
            getattr(op, vec)[draw(st.integers(0, 2))] = draw(bad_floats)
        elif how == "frame":
            op.frame = draw(st.sampled_from(["no_such_frame", "/" + op.frame, "", "world"]))
        elif how == "covariance_absent":
            op.covariance_absent = draw(st.sampled_from(["gyro", "accel"]))
        else:
            op.malformed = draw(st.sampled_from(IMU_MALFORMED + ARRAY_SPOILERS))


@st.composite
def programs(draw, streams: tuple[str, ...] = tuple(STREAMS)) -> Program:
    """A clean recording (0-40 ms, or 0.4-0.9 s: long enough to publish estimates), spoilt in up to
    12 places, with up to 10 control calls."""
    name = draw(st.sampled_from(streams))
    n = draw(st.integers(400, 900)) if draw(st.integers(0, 3)) else draw(st.integers(0, 40))
    wrench_every = draw(st.sampled_from([1, 2, 5, 10]))
    imu_every = draw(st.sampled_from([1, 2, 5]))
    t0 = draw(st.sampled_from([1.0, 12345.678, 1.7e9 + 0.123]))
    seed = draw(st.integers(0, 2**16))
    ops = _clean_ops(name, n, wrench_every, imu_every, t0, seed)
    stream = _reference_stream(name)
    if ops:
        previous: dict[str, float] = {}
        targets = sorted(draw(st.lists(st.integers(0, len(ops) - 1), max_size=12, unique=True)))
        j = 0
        for i, op in enumerate(ops):
            if j < len(targets) and targets[j] == i:
                _spoil(draw, op, previous, stream)
                j += 1
            previous[op.kind] = op.t
        # a few more IMU messages: some streams ignore them, uncounted
        for _ in range(draw(st.integers(0, 2))):
            at = draw(st.integers(0, len(ops)))
            ops.insert(at, Op(IMU, ops[min(at, len(ops) - 1)].t, 100.0, frame="imu_link", v1=[0, 0, 0],
                              v2=[0, 0, 9.81]))
    controls = draw(st.lists(st.tuples(st.integers(0, max(len(ops), 1)), st.sampled_from(CONTROL_DRAWS)), max_size=10))
    for at, kind in sorted(controls, reverse=True):
        ops.insert(min(at, len(ops)), Op(kind))
    batch = draw(st.sampled_from([1, 7, 20, 200]))
    return Program(name, ops, batch, seed)


# ------------------------------------------------------------------ checks


def check_published(stream: EstimationStream, out: Any) -> None:
    """A published estimate is finite, and PMD's physically consistent (or the empty payload)."""
    if out is None:
        return
    est = out.estimate
    assert np.all(np.isfinite(est.phi)), f"non-finite estimate published: phi = {est.phi}"
    assert np.all(np.isfinite(out.params_in_flange.phi)), "non-finite flange-frame estimate published"
    assert math.isfinite(out.t), f"estimate stamped {out.t}"
    check_estimate(est)


def check_estimate(est: Any) -> None:
    """Everything an estimate carries is finite (the condition number may be inf: rank deficient)."""
    assert np.all(np.isfinite(est.phi)), f"non-finite phi {est.phi}"
    assert est.covariance is None or np.all(np.isfinite(est.covariance)), "non-finite covariance"
    assert est.bias is None or np.all(np.isfinite(est.bias)), f"non-finite F/T offsets {est.bias}"
    assert np.all(np.isfinite(est.residual_rms)), f"non-finite residual RMS {est.residual_rms}"
    assert not math.isnan(est.condition_number), "condition number NaN"
    assert math.isfinite(est.dynamism), f"dynamism {est.dynamism}"
    if est.estimator == "pmd":
        empty = est.mass == 0.0 and not np.any(est.phi)
        assert est.physically_consistent or empty, f"PMD estimate not physically consistent: phi = {est.phi}"
    est.to_dict()  # every derived value (COM, inertia about it, their stds) computes without raising


class Ledger:
    """Per-stream bookkeeping of one call: sent, taken, dropped at entry."""

    def __init__(self, stream: EstimationStream) -> None:
        self.stream = stream
        self.taken_before = self._taken()
        self.counts_before = {k: stream.health.counts_for(k) for k in KINDS}

    def _taken(self) -> dict[str, int]:
        streams = self.stream.health.snapshot()["streams"]
        return {k: int(streams.get(k, {}).get("samples", 0)) for k in KINDS}

    def close(self, sent: dict[str, int], unstamped_dropped: dict[str, int], what: str) -> dict[str, int]:
        """Assert sent = taken + dropped per stream; returns what was taken."""
        taken_after = self._taken()
        taken = {k: taken_after[k] - self.taken_before[k] for k in KINDS}
        for k in KINDS:
            after = self.stream.health.counts_for(k)
            before = self.counts_before[k]
            delta = {r: after.get(r, 0) - before.get(r, 0) for r in after if after.get(r, 0) != before.get(r, 0)}
            dropped = sum(n for r, n in delta.items() if r in ENTRY_DROPS[k]) + unstamped_dropped.get(k, 0)
            if k == IMU and self.stream.imu_mount is None:
                assert taken[k] == 0 and not delta, f"{what}: a stream without IMU counted IMU input {delta}"
                continue
            assert sent.get(k, 0) == taken[k] + dropped, (
                f"{k}: sent {sent.get(k, 0)}, taken {taken[k]}, dropped {dropped} (counts {delta}) in {what}")
        return taken


def describe_ops(call: str, ops: list[Op]) -> str:
    """``call`` of n ops, the spoilt ones shown."""
    spoilt = [op for op in ops if op.spoilt]
    return f"{call} of {len(ops)} ops ({', '.join(sorted({op.kind for op in ops}))}); spoilt: {spoilt!r}"


def check_later_drops(stream: EstimationStream, taken_total: dict[str, int]) -> None:
    for k in KINDS:
        counts = stream.health.counts_for(k)
        later = sum(counts.get(r, 0) for r in LATER_DROPS if r not in ENTRY_DROPS[k])
        assert later <= taken_total[k], f"{k}: the aligner dropped {later} samples of {taken_total[k]} taken"


def run_control(stream: EstimationStream, kind: str) -> None:
    if kind == "process":
        stream.process()
    elif kind == "update":
        check_published(stream, stream.update_estimate())
    elif kind == "reset":
        stream.reset()
    elif kind == "pause":
        stream.paused = True
    elif kind == "resume":
        stream.paused = False
    elif kind == "finish":
        stream.finish()
    elif kind == "diagnostics":
        stream.diagnostics(200.0)


def finish_program(stream: EstimationStream, taken_total: dict[str, int]) -> None:
    stream.process()
    stream.finish()
    check_published(stream, stream.update_estimate())
    check_published(stream, stream.last)
    stream.diagnostics(200.0)
    check_later_drops(stream, taken_total)


# ---------------------------------------------------------- message path


def _stamp_fields(op: Op) -> tuple[Any, Any]:
    if op.raw_stamp is not None:
        return op.raw_stamp
    t = op.t
    if not math.isfinite(t):
        return t, 0  # a float in an int field: what a broken bridge could hand over
    sec = math.floor(t)
    return sec, int(round((t - sec) * 1e9)) % 1_000_000_000


def to_message(op: Op) -> Any:
    """The rosbags message of an input op (spoilt as the op says)."""
    make = message_factory()
    if op.kind == JOINTS:
        msg = outbound.joint_state_msg(make, 1.0, op.names, op.q, op.dq)
    elif op.kind == WRENCH:
        msg = outbound.wrench_stamped_msg(make, 1.0, op.frame, op.v1, op.v2)
    else:
        msg = outbound.imu_msg(make, 1.0, op.frame, op.v1, op.v2)
        if op.covariance_absent == "gyro":
            msg.angular_velocity_covariance[0] = -1.0
        elif op.covariance_absent == "accel":
            msg.linear_acceleration_covariance[0] = -1.0
    msg.header.stamp.sec, msg.header.stamp.nanosec = _stamp_fields(op)
    m = op.malformed
    if m == "message_none":
        return None
    if m == "header_none":
        msg.header = None
    elif m == "sec_string":
        msg.header.stamp.sec = "soon"
    elif m == "position_none":
        msg.position = None
    elif m == "position_strings":
        msg.position = ["a"] * len(op.q)
    elif m == "position_huge_int":
        msg.position = [HUGE_INT] * len(op.q)
    elif m == "force_huge_int":
        msg.wrench.force.x = HUGE_INT
    elif m == "velocity_strings":
        msg.velocity = ["fast"] * len(op.q)
    elif m == "name_none":
        msg.name = None
    elif m == "wrench_none":
        msg.wrench = None
    elif m == "force_string":
        msg.wrench.force.x = "heavy"
    elif m == "frame_none":
        msg.header.frame_id = None
    elif m == "gyro_none":
        msg.angular_velocity = None
    elif m == "accel_string":
        msg.linear_acceleration.z = "g"
    elif m == "covariance_none":
        msg.linear_acceleration_covariance = None
    return msg


def _unstamped_dropped(op: Op) -> bool:
    """Whether ``op`` is dropped as unstamped (a zero stamp, no receive time), and only for that.

    The stamp is read first, after only an IMU's covariance flags; unstamped messages are
    counted as such whatever else is wrong with them.
    """
    if op.wall is not None or op.malformed in ("message_none", "header_none", "sec_string"):
        return False
    if op.kind == IMU and (op.covariance_absent or op.malformed == "covariance_none"):
        return False
    sec, nanosec = _stamp_fields(op)
    return sec == 0 and nanosec == 0


def check_message_program(program: Program) -> None:
    """Run a program through ``ros_inbound.feed`` / ``feed_many`` and check every invariant."""
    stream = make_stream(program.stream)
    taken_total = dict.fromkeys(KINDS, 0)
    pending: list[Op] = []

    def flush() -> None:
        if not pending:
            return
        items = [(op.kind, to_message(op), op.wall) for op in pending]
        sent = {k: sum(op.kind == k for op in pending) for k in KINDS}
        unstamped = {k: sum(op.kind == k and _unstamped_dropped(op) for op in pending) for k in KINDS}
        ledger = Ledger(stream)
        if program.batch == 1:
            accepted = dict.fromkeys(KINDS, 0)
            for kind, msg, wall in items:
                accepted[kind] += bool(ros_inbound.feed(stream, kind, msg, wall))
        else:
            accepted = ros_inbound.feed_many(stream, items)
        taken = ledger.close(sent, unstamped, describe_ops("feed" if program.batch == 1 else "feed_many", pending))
        for k in KINDS:
            assert accepted.get(k, 0) == taken[k], f"{k}: feed accepted {accepted.get(k, 0)}, stream took {taken[k]}"
            taken_total[k] += taken[k]
        pending.clear()

    for op in program.ops:
        if op.kind in KINDS:
            pending.append(op)
            if len(pending) >= program.batch:
                flush()
        else:
            flush()
            run_control(stream, op.kind)
    flush()
    finish_program(stream, taken_total)


# ------------------------------------------------------------ array path


def _samples_sent(stamps: Any, spoil: str) -> int:
    """Samples in a push: one per stamp; a call whose arrays do not pair up drops at least one."""
    n = int(np.size(stamps))
    return max(n, 1) if spoil else n


def _array_call(stream: EstimationStream, ops: list[Op]) -> tuple[int, Callable[[], Any]]:
    """(samples sent, the push call) for a group of same-kind ops (one batch) or one spoilt op."""
    kind = ops[0].kind
    t = np.array([op.t for op in ops])
    spoil = ops[0].malformed if len(ops) == 1 else ""
    if kind == JOINTS:
        q = np.array([op.q for op in ops], dtype=float)
        dq = np.array([op.dq for op in ops], dtype=float) if all(len(op.dq) == len(op.q) for op in ops) else None
        names: list[str] | None = ops[0].names
        stamps: Any = t if len(ops) > 1 else float(t[0])
        if spoil == "rows_2":
            q = np.vstack([q, q])
        elif spoil == "cube":
            q = q[None]
        elif spoil == "stamps_2d":
            stamps = t.reshape(-1, 1).repeat(2, axis=1)
        elif spoil == "stamps_short":
            stamps = t[:0]
        elif spoil == "stamps_long":
            stamps = np.r_[t, t + 1e-4]
        elif spoil == "columns_short":
            q, names = q[:, :-1], None
        elif spoil == "scalar_values":
            q = np.float64(q.flat[0]) if q.size else np.float64(0.0)
        elif names == list(stream.joint_names):
            names = None  # the stream's own order: no names needed
        sent = _samples_sent(stamps, spoil)
        return sent, lambda: stream.push_joint_states(stamps, q if len(ops) > 1 or spoil else q[0], names, dq,
                                                      wall_time=ops[-1].wall)
    v1 = np.array([op.v1 for op in ops], dtype=float)
    v2 = np.array([op.v2 for op in ops], dtype=float)
    stamps = t if len(ops) > 1 else float(t[0])
    if spoil == "rows_2":
        v1 = np.vstack([v1, v1])
    elif spoil == "cube":
        v2 = v2[None]
    elif spoil == "stamps_2d":
        stamps = t.reshape(-1, 1).repeat(2, axis=1)
    elif spoil == "stamps_short":
        stamps = t[:0]
    elif spoil == "stamps_long":
        stamps = np.r_[t, t + 1e-4]
    elif spoil == "columns_short":
        v1 = v1[:, :2]
    elif spoil == "scalar_values":
        v1 = np.float64(v1.flat[0])
    sent = _samples_sent(stamps, spoil)
    push = stream.push_wrench if kind == WRENCH else stream.push_imu
    if kind == IMU and stream.imu_mount is None:
        sent = 0
    return sent, lambda: push(stamps, v1, v2, frame_id=ops[0].frame, wall_time=ops[-1].wall)


def check_array_program(program: Program) -> None:
    """Run a program through ``push_joint_states`` / ``push_wrench`` / ``push_imu`` in batches."""
    stream = make_stream(program.stream)
    taken_total = dict.fromkeys(KINDS, 0)
    group: list[Op] = []

    def push_group() -> None:
        if not group:
            return
        sent, call = _array_call(stream, group)
        ledger = Ledger(stream)
        result = call()
        taken = ledger.close({group[0].kind: sent}, {}, describe_ops("push", group))
        kind = group[0].kind
        assert bool(result) == (taken[kind] > 0), f"push returned {result!r} but the stream took {taken[kind]}"
        taken_total[kind] += taken[kind]
        group.clear()

    for op in program.ops:
        if op.kind not in KINDS:
            push_group()
            run_control(stream, op.kind)
            continue
        if op.malformed in JOINT_MALFORMED + WRENCH_MALFORMED + IMU_MALFORMED:
            op = dataclasses.replace(op, malformed="")  # message-only faults: the values stay
        compatible = (
            group and group[0].kind == op.kind and len(group) < program.batch and not group[0].malformed
            and not op.malformed and group[0].names == op.names and len(group[0].q) == len(op.q)
            and len(group[0].dq) == len(op.dq) and group[0].frame == op.frame
        )
        if not compatible:
            push_group()
        group.append(op)
    push_group()
    finish_program(stream, taken_total)


# --------------------------------------------------------------- estimators


@functools.cache
def _pmd_points() -> np.ndarray:
    return sample_points(parse_shape_spec("box:0.1,0.06,0.2@0,0,0.1"), max_points=40)


@st.composite
def sample_batches(draw) -> SensorSamples:
    """A batch of 0-40 samples: plausible motion, some entries replaced by adversarial values."""
    n = draw(st.integers(0, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    scale = draw(st.sampled_from([0.0, 1e-9, 1.0, 1e3]))
    data = np.column_stack([
        np.arange(n) * 1e-2,
        rng.normal(0, 1, (n, 9)) * scale,
        np.tile([0.0, 0.0, -9.81], (n, 1)) if draw(st.booleans()) else rng.normal(0, 5.66, (n, 3)),
        rng.normal(0, 5, (n, 6)) * draw(st.sampled_from([0.0, 1.0, 1e2])),
    ])
    if n:
        for _ in range(draw(st.integers(0, 6))):
            i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, 18))
            data[i, j] = draw(bad_floats)
        if draw(st.booleans()):  # a whole column spoilt
            data[:, draw(st.integers(0, 18))] = draw(bad_floats)
    return SensorSamples(data[:, 0], data[:, 1:4], data[:, 4:7], data[:, 7:10], data[:, 10:13], data[:, 13:19])


POINT_SETS = ("box", "one_point", "coincident", "line", "at_origin")
"""PMD's candidate points: a filled box, and degenerate sets a user's shape may give."""


def point_set(name: str) -> np.ndarray:
    if name == "box":
        return _pmd_points()
    return {
        "one_point": np.array([[0.0, 0.0, 0.1]]),
        "coincident": np.array([[0.02, 0.0, 0.1]] * 3),
        "line": np.column_stack([np.zeros(5), np.zeros(5), np.linspace(0.0, 0.2, 5)]),
        "at_origin": np.zeros((1, 3)),
    }[name]


@st.composite
def estimator_programs(draw) -> tuple[str, bool, str, list]:
    method = draw(st.sampled_from(sorted(ESTIMATORS)))
    bias = draw(st.booleans())
    points = draw(st.sampled_from(POINT_SETS)) if ESTIMATORS[method].needs_points else ""
    steps = draw(st.lists(st.one_of(sample_batches(), st.sampled_from(["estimate", "reset"])), min_size=1,
                          max_size=8))
    return method, bias, points, steps


def check_estimator_program(case: tuple[str, bool, str, list]) -> None:
    """After any updates, ``estimate()`` gives InsufficientData or a finite estimate (PMD: consistent)."""
    method, bias, points, steps = case
    cls = ESTIMATORS[method]
    estimator = cls.create(point_set(points) if cls.needs_points else None, bias=bias)
    for step in [*steps, "estimate"]:
        if isinstance(step, SensorSamples):
            estimator.update(step)
        elif step == "reset":
            estimator.reset()
        else:
            try:
                est = estimator.estimate()
            except InsufficientData:
                continue
            check_estimate(est)


# -------------------------------------------------------------- the tests


@CI
@given(programs())
@pytest.mark.slow
def test_stream_through_ros_messages(program):
    check_message_program(program)


@CI
@given(programs())
@pytest.mark.slow
def test_stream_through_arrays(program):
    check_array_program(program)


@settings(CI, max_examples=300)
@given(estimator_programs())
@pytest.mark.slow
def test_estimators_on_adversarial_samples(case):
    check_estimator_program(case)


def test_a_clean_program_publishes_estimates():
    """The fuzzing reaches the estimator: an unspoilt program gives a published, finite estimate."""
    for name in STREAMS:
        ops = _clean_ops(name, 600, 1, 1, 1.7e9, seed=1)
        check_message_program(Program(name, ops, batch=20))
        stream = make_stream(name)
        ros_inbound.feed_many(stream, [(op.kind, to_message(op), op.wall) for op in ops])
        stream.process()
        stream.finish()
        out = stream.update_estimate()
        assert out is not None and np.all(np.isfinite(out.estimate.phi)), name
        assert stream.health.counts == {}, (name, stream.health.counts)


# ------------------------------------------- what the fuzzing found, pinned


def _estimate_after(stream: EstimationStream, ops: list[Op]) -> Any:
    ros_inbound.feed_many(stream, [(op.kind, to_message(op), op.wall) for op in ops])
    stream.process()
    return stream.update_estimate()


def test_huge_values_are_dropped_before_the_filters_and_the_statistics():
    """One 1e300 wrench (no saturation check on a Franka) or joint position would overflow the
    filters and the statistics (every later solve failing, the estimate frozen for good)."""
    clean = _estimate_after(make_stream("panda_pmd"), _clean_ops("panda_pmd", 800, 1, 1, 1.7e9, seed=2))
    ops = _clean_ops("panda_pmd", 800, 1, 1, 1.7e9, seed=2)
    wrenches = [op for op in ops if op.kind == WRENCH]
    joints = [op for op in ops if op.kind == JOINTS]
    wrenches[100].v1[2], joints[300].q[3] = 1e300, -1e300
    stream = make_stream("panda_pmd")
    out = _estimate_after(stream, ops)
    assert stream.health.counts == {"out_of_range": 2}
    check_published(stream, out)
    assert out.estimate.mass == pytest.approx(clean.estimate.mass, rel=1e-3)


def test_array_shapes_that_do_not_pair_up_are_counted_not_raised():
    """Each of these raised (ValueError, TypeError, IndexError) out of push_wrench / push_imu."""
    stream = make_stream("fr3_imu_rtls")
    f, tau = np.ones(3), np.zeros(3)
    assert stream.push_wrench(1.0, f[:2], tau, "fr3_link8", 1.0) == 0  # force of two components
    assert stream.push_wrench(np.array([[1.0, 1.001]]), f, tau, "fr3_link8", 1.0) == 0  # 2-D stamps
    assert stream.push_wrench(np.array([1.0, 1.001]), np.ones((2, 3)), np.zeros((1, 3)), "", 1.0) == 0
    assert stream.push_imu(np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3)), "fr3_link8", 1.0) == 0  # empty
    assert stream.push_imu(np.array([1.0, 1.001]), np.zeros((1, 3)), np.zeros((2, 3)), "", 1.0) == 0
    assert stream.health.counts_for(WRENCH) == {"length_mismatch": 1 + 2 + 2}  # one per stamp
    assert stream.health.counts_for(IMU) == {"length_mismatch": 2}


def test_every_message_of_a_dropped_batch_is_counted():
    """A batch of joint states lacking a joint, or a wrench batch in a wrong frame, counted as one."""
    stream = make_stream("panda_pmd")
    names = list(stream.joint_names)
    t = 1.0 + np.arange(5) * 1e-3
    assert stream.push_joint_states(t, np.zeros((5, 6)), names[:6]) == 0
    assert stream.push_wrench(t, np.zeros((5, 3)), np.zeros((5, 3)), "panda_link0") == 0
    assert stream.health.counts == {"missing_joint": 5, "wrong_frame": 5}


def test_unreadable_numbers_in_messages_are_malformed_not_raised():
    """An integer no float holds, in a stamp or a field, raised OverflowError out of feed/feed_many."""
    stream = make_stream("panda_pmd")
    joint = to_message(_clean_ops("panda_pmd", 1, 1, 1, 1.0, seed=0)[0])
    joint.header.stamp.sec = HUGE_INT
    wrench = to_message(Op(WRENCH, 1.0, 1.0, frame="panda_link8", v1=[0, 0, 1], v2=[0, 0, 0]))
    wrench.wrench.force.x = HUGE_INT
    assert ros_inbound.feed_many(stream, [(JOINTS, joint, 1.0), (WRENCH, wrench, 1.0)]) == {
        JOINTS: 0, WRENCH: 0, IMU: 0}
    assert stream.health.counts == {"malformed_message": 2}


def test_far_future_stamps_are_dropped_before_the_grid_overflows():
    """A stamp of 1.7e308 s made the aligner's grid index overflow (OverflowError from process())."""
    stream = make_stream("panda_pmd")
    q = np.zeros(len(stream.joint_names))
    assert stream.push_joint_states(1.7e308, q) == 1  # received; the aligner drops it
    stream.push_wrench(1.7e308, np.zeros(3), np.zeros(3))
    assert stream.process() == 0
    assert stream.health.counts == {"out_of_range": 2}


def test_nan_samples_are_counted_when_pushed():
    """Counted at once, not when the aligner next merges: the count belongs to the call that sent them."""
    stream = make_stream("panda_pmd")
    q = np.zeros(len(stream.joint_names))
    q[2] = np.nan
    assert stream.push_joint_states(1.0, q) == 1
    assert stream.health.counts == {"non_finite": 1}


def test_estimators_drop_samples_beyond_any_sensor_range():
    """A 1e300 wrench or acceleration overflowed the statistics: eigh then raised LinAlgError."""
    rng = np.random.default_rng(3)
    n = 50
    g = np.tile([0.0, 0.0, -9.81], (n, 1))
    w = rng.normal(0, 1, (n, 6))
    w[7, 0], g[9, 1] = 1e300, -1e200
    samples = SensorSamples(np.arange(n) * 0.01, rng.normal(0, 1, (n, 3)), rng.normal(0, 1, (n, 3)),
                            rng.normal(0, 1, (n, 3)), g, w)
    for method in sorted(ESTIMATORS):
        cls = ESTIMATORS[method]
        estimator = cls.create(_pmd_points() if cls.needs_points else None, bias=True)
        estimator.update(samples)
        assert estimator.rejected_samples == 2 and estimator.samples_used == n - 2
        check_estimate(estimator.estimate())


def test_a_single_point_mass_is_physically_consistent():
    """PMD with its mass on one point (e.g. a one-point shape): the moments about the COM are zero up
    to rounding, which a consistency check without a tolerance calls negative."""
    from payload_estimator.core.inertia import InertialParameters

    point = InertialParameters.point_mass(1.1e-4, [-0.0375, 0.02, 0.0143])
    assert point.is_physically_consistent()
    estimator = ESTIMATORS["pmd"].create(point_set("one_point"), bias=False)
    n = 30
    g = np.tile([0.0, 0.0, -9.81], (n, 1))
    estimator.update(SensorSamples.at_rest(np.arange(n) * 0.01, g, np.tile([0, 0, -9.81 * 0.5, 0, 0, 0], (n, 1))))
    check_estimate(estimator.estimate())


PROPERTIES: dict[str, tuple[Any, Callable[[Any], None]]] = {
    "stream via ROS messages (feed, feed_many)": (programs(), check_message_program),
    "stream via arrays (push_*)": (programs(), check_array_program),
    "estimators on adversarial SensorSamples": (estimator_programs(), check_estimator_program),
}
"""Property name -> (strategy, check): what benchmarks/fuzz_campaign.py runs at scale."""

