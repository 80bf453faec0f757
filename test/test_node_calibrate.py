"""``~/calibrate`` without ROS (``node.calibrate``, and the supervisor's part): a simulated unloaded arm's joint
states, serialised as the node receives them, recorded, checked, fitted and written; and the refusals."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.cdr import SerializedJointState
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.pipeline.arm_dynamics import ArmCalibration
from payload_estimator.pipeline.build import build_stream, builtin_description, load_arm_calibration
from payload_estimator.settings import settings_for_robot
from payload_estimator.supervision.calibration_service import (
    DEFAULT_DURATION_S,
    MIN_JOINT_RANGE_RAD,
    CalibrateRequest,
    JointStateRecorder,
    calibrate_request,
    fit_calibration,
    recording_refusal,
)


@pytest.fixture(scope="module")
def typestore():
    return ros_typestore(ours=False)


@pytest.fixture(scope="module")
def unloaded_run():
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel
    from payload_estimator.sim.mujoco_sim import simulate

    return simulate(robot="panda", payload="none", trajectory="thesis", duration=8.0, rate_hz=250.0, seed=1,
                    efforts=EffortModel.for_robot("panda"), arm_mismatch=ArmMismatch(seed=3))


def joint_items(typestore, run, t0=100.0, efforts=True, serialise=True, names=None):
    """(kind, message, receive time) as the node's queue holds them: receive times from ``t0``."""
    make = ros_factories.rosbags_factory(typestore)
    out = []
    for k, t in enumerate(run.joint_t):
        msg = ros_outbound.joint_state_msg(make, 1000.0 + float(t), names or run.joint_names, run.joint_q[k],
                                           run.joint_dq[k], run.joint_effort[k] if efforts else ())
        if serialise:
            msg = SerializedJointState(bytes(typestore.serialize_cdr(msg, msg.__msgtype__)))
        out.append(("joint_states", msg, t0 + float(t)))
    return out


def kinematics():
    settings = settings_for_robot("panda", "joint_torques", arm_calibration="")
    return build_stream(settings, builtin_description(settings)).kinematics


# -------------------------------------------------------------------- requests


def test_requests_are_checked_and_paths_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    r = calibrate_request(0.0, "", "~/cal/arm.yaml", True)
    assert r == CalibrateRequest(DEFAULT_DURATION_S, tmp_path / "cal" / "arm.yaml", True)
    monkeypatch.chdir(tmp_path)
    assert calibrate_request(8.0, "here.yaml", "~/x.yaml").path == tmp_path / "here.yaml"
    with pytest.raises(ValueError, match="no file to write"):
        calibrate_request(8.0, " ", "")
    for bad in (-1.0, 1e6, float("nan")):
        with pytest.raises(ValueError, match="refused: duration"):
            calibrate_request(bad, "a.yaml", "")


# -------------------------------------------------------------------- recording


def test_the_recorder_reads_serialised_and_plain_messages_alike(typestore, unloaded_run):
    run = unloaded_run
    names = list(run.joint_names)[::-1] + ["panda_finger_joint1"]  # any order, extra joints
    order = [names.index(j) for j in run.joint_names]

    class Reordered:  # the run's columns as the names above have them
        joint_names = names
        joint_t = run.joint_t
        joint_q = np.column_stack([run.joint_q[:, ::-1], np.zeros(len(run.joint_t))])
        joint_dq = np.column_stack([run.joint_dq[:, ::-1], np.zeros(len(run.joint_t))])
        joint_effort = np.column_stack([run.joint_effort[:, ::-1], np.zeros(len(run.joint_t))])

    assert order == list(range(6, -1, -1))
    recorded = []
    for serialise in (True, False):
        rec = JointStateRecorder(run.joint_names, start=100.0, duration_s=5.0)
        items = joint_items(typestore, Reordered, serialise=serialise, names=names)
        for k in range(0, len(items), 13):  # the loop's turns
            rec.add(items[k:k + 13] + [("wrench", None, 101.0)])
        assert rec.done(105.0) and not rec.done(104.99)
        t, q, e = rec.arrays()
        n = int(np.sum(run.joint_t < 5.0))
        assert rec.messages == rec.samples == len(t) == n and rec.without_efforts == 0
        np.testing.assert_array_equal(q, run.joint_q[:n])  # bit for bit, in the arm's joint order
        np.testing.assert_array_equal(e, run.joint_effort[:n])
        np.testing.assert_allclose(t, 1000.0 + run.joint_t[:n], rtol=0, atol=1e-9)
        recorded.append((t, q, e))
    for a, b in zip(*recorded):
        np.testing.assert_array_equal(a, b)


def test_messages_without_efforts_or_joints_are_counted_and_refused(typestore, unloaded_run):
    run = unloaded_run
    rec = JointStateRecorder(run.joint_names, 100.0, 8.0)
    rec.add(joint_items(typestore, run, efforts=False))
    assert rec.samples == 0 and rec.without_efforts == rec.messages == len(run.joint_t)
    why = recording_refusal(rec, "/joint_states")
    assert why.startswith("refused: the joint states on /joint_states carry no efforts")

    rec = JointStateRecorder(run.joint_names, 100.0, 8.0)
    rec.add([(k, m, t) for k, m, t in joint_items(typestore, run)[:500]]
            + joint_items(typestore, run, efforts=False, serialise=False)[500:])
    assert rec.samples == 500 and rec.without_efforts == len(run.joint_t) - 500
    assert recording_refusal(rec) is None  # 2 s with efforts: enough (the rest is counted)

    rec = JointStateRecorder(run.joint_names, 100.0, 8.0)
    rec.add(joint_items(typestore, run, names=[n.replace("panda", "arm") for n in run.joint_names]))
    assert "has every arm joint" in recording_refusal(rec)
    empty = JointStateRecorder(run.joint_names, 100.0, 8.0)
    empty.add(joint_items(typestore, run, t0=200.0))  # received after the recording
    assert recording_refusal(empty, "/js") == "refused: no joint states arrived on /js during the 8 s recording"


def test_joints_that_did_not_move_are_named(typestore, unloaded_run):
    run = unloaded_run

    class Still:
        joint_names = run.joint_names
        joint_t = run.joint_t
        joint_q = run.joint_q.copy()
        joint_dq = run.joint_dq
        joint_effort = run.joint_effort

    Still.joint_q[:, 2] = Still.joint_q[0, 2] + 0.3 * MIN_JOINT_RANGE_RAD * np.sin(run.joint_t)
    Still.joint_q[:, 6] = 0.5
    rec = JointStateRecorder(run.joint_names, 100.0, 8.0)
    rec.add(joint_items(typestore, Still))
    why = recording_refusal(rec)
    assert why.startswith("refused: too little motion: panda_joint3 (0.0") and "panda_joint7 (0.000 rad)" in why
    assert "panda_joint1" not in why


# -------------------------------------------------------------------- the fit


def test_a_recording_of_the_unloaded_arm_gives_a_calibration_that_loads(tmp_path, typestore, unloaded_run):
    run = unloaded_run
    rec = JointStateRecorder(run.joint_names, 100.0, 8.0)
    rec.add(joint_items(typestore, run))
    assert recording_refusal(rec) is None
    path = tmp_path / "deep" / "dir" / "panda.yaml"
    result = fit_calibration(kinematics(), rec, CalibrateRequest(8.0, path, False), robot="panda")
    assert result.success, result.message
    assert result.path == str(path) and path.is_file() and result.message.endswith(f"written to {path}")
    assert result.joint_names == tuple(run.joint_names) and len(result.rms_before) == len(result.rms_after) == 7
    assert result.samples > 500
    # friction and the mismatched links: the calibration explains the efforts far better than the description
    assert np.sqrt(np.mean(np.square(result.rms_after))) < 0.5 * np.sqrt(np.mean(np.square(result.rms_before)))
    cal = ArmCalibration.load(path)
    assert cal.robot == "panda" and cal.info["source"] == "~/calibrate"
    settings = settings_for_robot("panda", "joint_torques", arm_calibration=str(path))
    assert load_arm_calibration(settings, run.joint_names) is not None
    # another robot's file is refused where the node loads it
    with pytest.raises(ValueError, match="for the panda, not the fr3"):
        load_arm_calibration(settings_for_robot("fr3", "joint_torques", arm_calibration=str(path),
                                                joint_names=list(run.joint_names)), run.joint_names)


def test_efforts_that_are_not_the_arms_torques_are_refused_with_the_setting_to_change(tmp_path, typestore,
                                                                                       unloaded_run):
    """``~/calibrate`` checks the efforts as ``calibrate`` does: currents read as N·m (a UR's, a 40 N·m/A joint's)
    or efforts of the wrong sign are refused, naming the setting; currents with ``effort_scale`` are fitted."""
    for factor, words, effort_scale, success in ((1.0 / 40.0, "look like currents", False, False),
                                                 (-1.0, "wrong sign", False, False),
                                                 (-1.0, "wrong sign", True, False),
                                                 (1.0 / 40.0, None, True, True)):
        class Run:
            joint_names = unloaded_run.joint_names
            joint_t, joint_q, joint_dq = unloaded_run.joint_t, unloaded_run.joint_q, unloaded_run.joint_dq
            joint_effort = unloaded_run.joint_effort * factor

        rec = JointStateRecorder(unloaded_run.joint_names, 100.0, 8.0)
        rec.add(joint_items(typestore, Run))
        path = tmp_path / f"cal_{factor:g}_{effort_scale}.yaml"
        result = fit_calibration(kinematics(), rec, CalibrateRequest(8.0, path, effort_scale), robot="panda")
        assert result.success == success, result.message
        assert path.is_file() == success
        if words:
            assert result.message.startswith("refused: ") and words in result.message, result.message
            assert "torque_constants" in result.message or "effort_unit" in result.message


def test_an_unwritable_file_is_an_answer_not_an_exception(tmp_path, typestore, unloaded_run):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rec = JointStateRecorder(unloaded_run.joint_names, 100.0, 8.0)
    rec.add(joint_items(typestore, unloaded_run))
    result = fit_calibration(kinematics(), rec, CalibrateRequest(8.0, blocker / "cal.yaml"))
    assert not result.success and result.message.startswith("cannot write")
    assert not Path(blocker / "cal.yaml").exists()


# ------------------------------------------------- the supervisor in joint-torque mode (what the node runs)


def supervisor_for(path, make, **overrides):
    from payload_estimator.supervision.supervisor import Supervisor

    parameters = settings_for_robot("panda", "joint_torques", arm_calibration=str(path),
                                    use_builtin_description=True, **overrides).to_dict()
    return Supervisor(parameters, make)


def node_status(supervisor, now):
    msg = supervisor.diagnostics(now, now)
    return msg.status[0]


def test_without_its_calibration_the_node_says_which_file_and_what_to_do_then_calibrates(tmp_path, typestore,
                                                                                       unloaded_run):
    from payload_estimator.io.diagnostic_level import DiagnosticLevel
    from payload_estimator.supervision.status import CONFIGURATION_ERROR, RUNNING

    make = ros_factories.rosbags_factory(typestore)
    path = tmp_path / "cal" / "panda.yaml"
    sup = supervisor_for(path, make)
    items = joint_items(typestore, unloaded_run, t0=100.0)
    assert sup.tick(99.0, []) is None
    assert sup.status.state == CONFIGURATION_ERROR and not sup.running
    status = node_status(sup, 99.0)
    assert status.level == DiagnosticLevel.ERROR
    assert f"no arm calibration at {path}" in status.message and "~/calibrate" in status.message

    # ~/calibrate records while the stream cannot run (the loop feeds it every turn)
    request = calibrate_request(6.0, "", str(path))
    assert sup.start_calibration(request, 100.0) is None
    assert sup.start_calibration(request, 100.0) == "refused: a calibration is already recording"
    for k in range(0, len(items), 13):
        sup.tick(items[k][2], items[k:k + 13])
    assert "recording 6.0 of 6 s" in dict((v.key, v.value) for v in node_status(sup, 108.0).values)["calibrating"]
    recorder = sup.stop_calibration()
    assert sup.calibration is None and recording_refusal(recorder) is None
    result = fit_calibration(sup.calibration_kinematics(), recorder, request, robot="panda")
    assert result.success and path.is_file()
    sup.reload_calibration()
    sup.tick(200.0, [])
    assert sup.status.state == RUNNING and sup.stream.wrench_input.torque_wrench.dynamics.calibration is not None

    # a calibration of other joints: an ERROR naming the file and ~/calibrate
    other = tmp_path / "other.yaml"
    cal = ArmCalibration.load(path)
    ArmCalibration.from_dict({**cal.to_dict(), "robot": "fr3"}).save(other)
    sup = supervisor_for(other, make)
    sup.tick(99.0, [])
    status = node_status(sup, 99.0)
    assert status.level == DiagnosticLevel.ERROR and str(other) in status.message
    assert "for the fr3, not the panda" in status.message and "call ~/calibrate" in status.message


def test_joint_states_without_efforts_make_the_node_status_an_error_and_no_estimate(tmp_path, typestore,
                                                                                     unloaded_run):
    from payload_estimator.io.diagnostic_level import DiagnosticLevel
    from payload_estimator.pipeline.health import MISSING_EFFORT

    make = ros_factories.rosbags_factory(typestore)
    sup = supervisor_for("", make)  # uncalibrated: the description, no friction
    items = joint_items(typestore, unloaded_run, t0=100.0, efforts=False)
    outputs = [sup.tick(items[k][2], items[k:k + 13]) for k in range(0, len(items), 13)]
    assert sup.running and all(o is None for o in outputs)
    assert sup.stream.health.counts_for("joint_states")[MISSING_EFFORT] == len(items)
    status = node_status(sup, 108.0)
    assert status.level == DiagnosticLevel.ERROR
    assert status.message.startswith(f"{len(items)} joint states without an effort per joint")
    assert node_status(sup, 109.0).level == DiagnosticLevel.OK  # none since: the stream's statuses say stale


def test_a_calibration_that_did_not_determine_its_scales_makes_the_estimate_say_so(tmp_path, typestore,
                                                                                    unloaded_run, caplog):
    """A calibration whose effort scales the recording left undetermined (an unloaded arm's wrist joints): the node
    runs on it, logs one warning per caveat, and its status is a WARN whose values name the joints and what to do;
    ``replay`` prints the same lines. A calibration that determined everything leaves the status OK."""
    from payload_estimator.io.diagnostic_level import DiagnosticLevel
    from payload_estimator.supervision.status import RUNNING

    make = ros_factories.rosbags_factory(typestore)
    request = calibrate_request(6.0, "", str(tmp_path / "panda.yaml"))
    recorder = JointStateRecorder(unloaded_run.joint_names, start=100.0, duration_s=6.0)
    items = joint_items(typestore, unloaded_run, t0=100.0)
    for k in range(0, len(items), 13):
        recorder.add(items[k:k + 13])
    assert fit_calibration(kinematics(), recorder, request, robot="panda").success
    cal = ArmCalibration.load(request.path)
    assert cal.caveats() == []
    undetermined = tmp_path / "undetermined.yaml"
    info = {**cal.info, "effort_scale_determined": [True] * 5 + [False] * 2, "effort_scale_std": [0.01] * 5 + [0.4] * 2}
    ArmCalibration.from_dict({**cal.to_dict(), "info": info}).save(undetermined)
    for path, level in ((request.path, DiagnosticLevel.OK), (undetermined, DiagnosticLevel.WARN)):
        sup = supervisor_for(path, make)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            sup.tick(99.0, [])
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert sup.status.state == RUNNING
        status = node_status(sup, 99.0)
        assert status.level == level, status.message
        values = dict((v.key, v.value) for v in status.values)
        if level == DiagnosticLevel.WARN:
            assert "panda_joint6 (std 40 %), panda_joint7 (std 40 %)" in values["arm calibration caveats"]
            assert "known_payload_mass" in values["arm calibration caveats"]
            assert len(warnings) == 1 and "effort scale of panda_joint6" in warnings[0]
        else:
            assert "arm calibration caveats" not in values and warnings == []
