"""~/apply: which request goes where, refused unless the estimate may be handed over."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import yaml

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.results import FROM_PRIOR, IDENTIFIED, NOT_IDENTIFIED, Estimate, Identification, ModelFit
from payload_estimator.outputs.apply import build_apply_request
from payload_estimator.pipeline.stream import StreamEstimate
from payload_estimator.settings import settings_for_robot


def _out(mass=0.8, converged=True, com=(0.0, 0.01, 0.06)):
    params = InertialParameters.from_mass_com_inertia(mass, np.array(com), np.diag([2e-3, 3e-3, 1e-3]))
    est = Estimate(estimator="pmd", params=params, covariance=None, bias=None, residual_rms=np.zeros(6),
                   condition_number=10.0, samples_used=100, inertia_identifiable=True)
    flange = params.transformed(np.eye(3), np.array([0.0, 0.0, 0.1]))
    return StreamEstimate(est, 1.0, converged, "converged" if converged else "still moving", flange)


def test_franka_request_is_in_the_flange_frame():
    s = settings_for_robot("panda")
    req, reason = build_apply_request(s, _out())
    assert req is not None and reason == "converged, physically consistent, identified and fitting"
    assert req.service_type == "franka_msgs/srv/SetLoad" and req.service_name == "/service_server/set_load"
    assert np.isclose(req.fields["mass"], 0.8)
    assert np.allclose(req.fields["center_of_mass"], [0.0, 0.01, 0.16])
    assert len(req.fields["load_inertia"]) == 9
    text = req.to_yaml()
    assert text.startswith("# franka_msgs/srv/SetLoad on /service_server/set_load")
    assert yaml.safe_load(text) == req.fields


def test_xarm_request_in_mm():
    req, _ = build_apply_request(settings_for_robot("xarm7"), _out())
    assert req.service_type == "xarm_msgs/srv/SetTcpLoad" and req.package == "xarm_msgs"
    assert np.allclose(req.fields["center_of_gravity"], [0.0, 10.0, 160.0])


def test_ur_request_in_the_tool_flange_frame_without_inertia():
    """ur_robot_driver's SetPayload: kg and a Vector3 in m, the mass and COM only (converge_on auto: mass_com)."""
    s = settings_for_robot("ur10e")
    req, _ = build_apply_request(s, _out())
    assert req.service_type == "ur_msgs/srv/SetPayload" and req.package == "ur_msgs"
    assert req.service_name == "/io_and_status_controller/set_payload"
    assert np.isclose(req.fields["mass"], 0.8)
    assert req.fields["center_of_gravity"] == {"x": 0.0, "y": 0.01, "z": 0.16}
    assert not s.converge_on_inertia
    no_inertia = _with(_out(), identification=Identification(inertia=NOT_IDENTIFIED))
    assert build_apply_request(s, no_inertia)[0] is not None
    assert build_apply_request(settings_for_robot("ur5e"), _out(mass=5.5), force=True)[0] is None  # 5 kg rated


def test_gravity_compensation_parameters_in_the_sensor_frame():
    s = settings_for_robot("xarm7", apply_target="gravity_compensation", gravity_compensation_node="/ft_filter")
    req, _ = build_apply_request(s, _out())
    assert req.service_name == "/ft_filter/set_parameters"
    names = [p["name"] for p in req.fields["parameters"]]
    assert names == ["tool.mass", "tool.CoG"]
    assert np.allclose(req.fields["parameters"][1]["value"]["double_array_value"], [0.0, 0.01, 0.06])
    req, why = build_apply_request(s.with_(gravity_compensation_node=""), _out())
    assert req is None and "gravity_compensation_node" in why


def test_gravity_compensation_in_a_filter_chain():
    """force_torque_sensor_broadcaster's sensor_filter_chain: the filter's parameters behind its chain prefix."""
    s = settings_for_robot("xarm7", apply_target="gravity_compensation",
                           gravity_compensation_node="/force_torque_sensor_broadcaster")
    for prefix in ("sensor_filter_chain.filter2.params.", "sensor_filter_chain.filter2.params"):
        req, _ = build_apply_request(s.with_(gravity_compensation_prefix=prefix), _out())
        assert req.service_name == "/force_torque_sensor_broadcaster/set_parameters"
        assert [p["name"] for p in req.fields["parameters"]] == [
            "sensor_filter_chain.filter2.params.tool.mass", "sensor_filter_chain.filter2.params.tool.CoG"]
        assert np.isclose(req.fields["parameters"][0]["value"]["double_value"], 0.8)


def test_refusals():
    s = settings_for_robot("panda")
    assert build_apply_request(s.with_(apply_target="none"), _out())[0] is None
    assert build_apply_request(s, None) == (None, "no estimate yet")
    req, why = build_apply_request(s, _out(converged=False))
    assert req is None and "not converged" in why and "still moving" in why
    assert build_apply_request(s, _out(converged=False), force=True)[0] is not None
    req, why = build_apply_request(s, _out(mass=5.0), force=True)
    assert req is None and "exceeds" in why


def _with(out, **changes):
    return replace(out, estimate=replace(out.estimate, **changes))


def test_nothing_unsafe_leaves_without_force():
    """A poor model fit, an unidentified COM axis or inertia (for the targets that take it): refused, with
    the reason; forced, sent and said to be forced. Not even force sends a non-physical mass."""
    franka, xarm = settings_for_robot("panda"), settings_for_robot("xarm7")
    poor = _with(_out(), model_fit=ModelFit(True, False, 6.0, float("nan"), "the residuals follow the motion"))
    req, why = build_apply_request(franka, poor)
    assert req is None and "does not fit" in why and "follow the motion" in why and "force" in why
    req, why = build_apply_request(franka, poor, force=True)
    assert req is not None and why.startswith("forced: ") and "does not fit" in why
    static = _with(_out(), identification=Identification(IDENTIFIED, (IDENTIFIED, IDENTIFIED, NOT_IDENTIFIED),
                                                         NOT_IDENTIFIED))
    req, why = build_apply_request(xarm, static)
    assert req is None and "COM z" in why
    no_inertia = _with(_out(), identification=Identification(inertia=NOT_IDENTIFIED))
    assert build_apply_request(xarm, no_inertia)[0] is not None  # SetTcpLoad takes no inertia
    req, why = build_apply_request(franka, no_inertia)
    assert req is None and "inertia" in why  # SetLoad does
    prior = _with(_out(), identification=Identification(inertia=FROM_PRIOR))
    assert build_apply_request(franka, prior)[0] is not None  # PMD's shape prior may supply the inertia
    negative = _out(mass=-0.1)
    req, why = build_apply_request(franka, negative, force=True)
    assert req is None and "not positive" in why and "force" not in why
