"""``~/calibrate`` from the request to the estimator using the file, without ROS:
:class:`~payload_estimator.supervision.calibration_service.CalibrationService`.

The service runs as in the node, against the supervisor the node runs in joint-torque mode; what it waits
for stands in: the clock and its sleep, each of which runs the node's processing loop over what a simulated
unloaded Panda published meanwhile (serialised joint states with efforts, receive times from 100 s).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.cdr import SerializedJointState
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.settings import settings_for_robot
from payload_estimator.supervision.calibration_service import CalibrationService
from payload_estimator.supervision.status import CONFIGURATION_ERROR, RUNNING
from payload_estimator.supervision.supervisor import Supervisor

T0 = 100.0


@pytest.fixture(scope="module")
def typestore():
    return ros_typestore(ours=False)


@pytest.fixture(scope="module")
def items(typestore):
    """8 s of an unloaded Panda moving, as the node's queue holds its joint states."""
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel
    from payload_estimator.sim.mujoco_sim import simulate

    run = simulate(robot="panda", payload="none", trajectory="thesis", duration=8.0, rate_hz=250.0, seed=1,
                   efforts=EffortModel.for_robot("panda"), arm_mismatch=ArmMismatch(seed=3))
    make = ros_factories.rosbags_factory(typestore)
    out = []
    for k, t in enumerate(run.joint_t):
        msg = ros_outbound.joint_state_msg(make, 1000.0 + float(t), run.joint_names, run.joint_q[k], run.joint_dq[k],
                                           run.joint_effort[k])
        out.append(("joint_states", SerializedJointState(bytes(typestore.serialize_cdr(msg, msg.__msgtype__))),
                    T0 + float(t)))
    return out


class Loop:
    """The node's clock, and its processing loop run by every sleep over what arrived meanwhile."""

    def __init__(self, sup: Supervisor, items: list) -> None:
        self.sup, self.items, self.now, self._next = sup, items, T0, 0
        self.during_sleep = None

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        times = [w for _, _, w in self.items]
        end = int(np.searchsorted(times, self.now, side="right"))
        self.sup.tick(self.now, self.items[self._next:end])
        self._next = end
        if self.during_sleep is not None:
            self.during_sleep()


def service_for(sup: Supervisor, loop: Loop, set_parameter=None, running=lambda: True) -> CalibrationService:
    return CalibrationService(sup, threading.RLock(), set_parameter or (lambda path: (True, "")), running,
                              clock=loop.clock, sleep=loop.sleep)


def supervisor_for(path, typestore) -> Supervisor:
    parameters = settings_for_robot("panda", "joint_torques", arm_calibration=str(path),
                                    use_builtin_description=True).to_dict()
    sup = Supervisor(parameters, ros_factories.rosbags_factory(typestore))
    sup.tick(T0 - 1.0, [])
    return sup


def test_the_file_the_parameter_names_is_written_and_estimated_with(tmp_path, typestore, items):
    path = tmp_path / "cal" / "panda.yaml"
    sup = supervisor_for(path, typestore)
    assert sup.status.state == CONFIGURATION_ERROR  # no calibration yet
    loop = Loop(sup, items)
    result = service_for(sup, loop).calibrate(6.0, "")
    assert result.success and result.path == str(path) and path.is_file(), result.message
    assert result.message.endswith(f"; written to {path}; estimating with it")
    assert len(result.joint_names) == 7 and len(result.rms_after) == 7 and result.samples > 0
    assert loop.now == pytest.approx(T0 + 6.0 + 1.0, abs=0.06)  # the recording, then the loop's last turns
    assert sup.calibration is None
    sup.tick(loop.now + 0.05, [])
    assert sup.status.state == RUNNING and sup.stream.wrench_input.torque_wrench.dynamics.calibration is not None


def test_another_file_is_named_by_the_parameter_or_said_not_loaded(tmp_path, typestore, items):
    sup = supervisor_for("", typestore)  # uncalibrated: runs with the description alone
    asked = []
    result = service_for(sup, Loop(sup, items), lambda path: (asked.append(path) or True, "")).calibrate(
        6.0, str(tmp_path / "new.yaml"))
    assert result.success and asked == [str(tmp_path / "new.yaml")]
    assert result.message.endswith("; arm_calibration now names it and the estimation restarts with it")
    result = service_for(sup, Loop(sup, items), lambda path: (False, "read-only")).calibrate(
        6.0, str(tmp_path / "other.yaml"))
    assert result.success and result.message.endswith("; not loaded: read-only")


def test_refusals_are_answers_and_leave_nothing_recording(tmp_path, typestore, items):
    sup = supervisor_for(tmp_path / "panda.yaml", typestore)
    loop = Loop(sup, items)
    service = service_for(sup, loop)
    result = service.calibrate(-1.0, "")
    assert not result.success and result.message.startswith("refused: duration must be in (0, 300] s")
    assert sup.calibration is None

    second = []
    loop.during_sleep = lambda: second.append(service.calibrate(6.0, "")) if not second else None
    result = service.calibrate(1.0, "")  # too short to fit
    assert [r.message for r in second] == ["refused: a calibration is already recording"]
    assert not result.success and result.message.startswith("refused:") and sup.calibration is None

    silent = Loop(sup, [])
    result = service_for(sup, silent).calibrate(2.0, "")
    topic = settings_for_robot("panda").joint_states_topic
    assert result.message == f"refused: no joint states arrived on {topic} during the 2 s recording"

    stopping = Loop(sup, items)
    result = service_for(sup, stopping, running=lambda: stopping.now < T0 + 0.5).calibrate(6.0, "")
    assert not result.success and stopping.now < T0 + 1.0  # the node shut down: no waiting for the end
    assert sup.calibration is None


KNOWN_MASS = 2.0
KNOWN_COM_IN_SENSOR = np.array([0.03, -0.02, 0.06])


@pytest.fixture(scope="module")
def loaded_items(typestore):
    """8 s of the same Panda holding a known 2 kg point mass (another motion), from 130 s; and its COM in the
    flange frame."""
    from payload_estimator.core.inertia import InertialParameters
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.robots import get_robot
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel
    from payload_estimator.sim.mujoco_sim import simulate

    payload = InertialParameters.point_mass(KNOWN_MASS, KNOWN_COM_IN_SENSOR)
    run = simulate(robot="panda", payload=payload, trajectory="thesis", duration=8.0, rate_hz=250.0, seed=2,
                   efforts=EffortModel.for_robot("panda"), arm_mismatch=ArmMismatch(seed=3))
    flange = get_robot("panda").flange_frame
    R, p = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names).rigid_pose(run.sensor_frame, flange)
    com_in_flange = payload.transformed(R, p).com
    make = ros_factories.rosbags_factory(typestore)
    out = []
    for k, t in enumerate(run.joint_t):
        msg = ros_outbound.joint_state_msg(make, 2000.0 + float(t), run.joint_names, run.joint_q[k], run.joint_dq[k],
                                           run.joint_effort[k])
        out.append(("joint_states", SerializedJointState(bytes(typestore.serialize_cdr(msg, msg.__msgtype__))),
                    T0 + 30.0 + float(t)))
    return out, com_in_flange


def test_a_known_payload_is_fitted_with_the_unloaded_recording_kept(tmp_path, typestore, items, loaded_items):
    """The ``calibrate --known-payload-bag`` counterpart: a call without payload, then one holding a known payload
    (``known_payload_mass``, ``known_payload_com``); the second fits both recordings, with the load-dependent
    friction asked for."""
    from payload_estimator.pipeline.arm_dynamics import ArmCalibration

    held, com_in_flange = loaded_items
    path = tmp_path / "panda.yaml"
    sup = supervisor_for(path, typestore)
    loop = Loop(sup, items + held)
    service = service_for(sup, loop)
    result = service.calibrate(6.0, "", known_payload_mass=KNOWN_MASS, known_payload_com=list(com_in_flange))
    assert not result.success and "call ~/calibrate without payload first" in result.message
    assert loop.now == T0 and sup.calibration is None  # refused before recording
    for mass, com, words in ((-1.0, [0, 0, 0], "known_payload_mass must be 0"),
                             (1.0, [0.0, 0.1], "known_payload_com must be 3 numbers")):
        result = service.calibrate(6.0, "", known_payload_mass=mass, known_payload_com=com)
        assert not result.success and words in result.message, result.message
    first = service.calibrate(6.0, "", load_friction=True)
    assert first.success, first.message
    unloaded = ArmCalibration.load(path)
    assert "known_payload_mass" not in unloaded.info and "load_friction_determined" in unloaded.info
    loop.now = T0 + 30.0  # the arm now holds the known payload
    second = service.calibrate(6.0, "", load_friction=True, known_payload_mass=KNOWN_MASS,
                               known_payload_com=list(com_in_flange))
    assert second.success, second.message
    assert f"holding the known {KNOWN_MASS:g} kg payload" in second.message
    assert second.samples == first.samples  # the figures are the unloaded recording's
    both = ArmCalibration.load(path)
    assert both.info["known_payload_mass"] == KNOWN_MASS
    np.testing.assert_allclose(both.info["known_payload_com"], com_in_flange, atol=1e-6)
    # the payload did not become part of the arm: the last body's mass is the unloaded fit's, not 2 kg more
    assert abs(both.body_parameters[-1, 0] - unloaded.body_parameters[-1, 0]) < 0.3 * KNOWN_MASS
    assert sup.calibration is None
