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


def test_ur_request_in_the_tool_flange_frame_with_inertia():
    """ur_robot_driver's SetPayload (ur_msgs 2.4 on): kg, a Vector3 in m and the inertia matrix's entries about the
    COM in the flange's axes, which are optional (an older SetPayload has none); the inertia must be identified
    (converge_on auto: all), as for Franka's SetLoad."""
    s = settings_for_robot("ur10e")
    out = _out()
    inertia = np.array([[3e-3, 1e-4, -2e-4], [1e-4, 4e-3, 3e-4], [-2e-4, 3e-4, 2e-3]])
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # flange axes: sensor's turned 90° about z
    params = InertialParameters.from_mass_com_inertia(0.8, np.array([0.0, 0.01, 0.06]), inertia)
    out = replace(out, estimate=replace(out.estimate, params=params),
                  params_in_flange=params.transformed(turn, np.array([0.0, 0.0, 0.1])))
    req, _ = build_apply_request(s, out)
    assert req.service_type == "ur_msgs/srv/SetPayload" and req.package == "ur_msgs"
    assert req.service_name == "/io_and_status_controller/set_payload"
    assert np.isclose(req.fields["mass"], 0.8)
    assert np.allclose(list(req.fields["center_of_gravity"].values()), [-0.01, 0.0, 0.16])
    assert list(req.fields["center_of_gravity"]) == ["x", "y", "z"]
    expected = turn @ inertia @ turn.T  # about the COM, flange axes: the translation does not enter
    got = {k: req.fields[k] for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    assert np.allclose(list(got.values()), [expected[0, 0], expected[1, 1], expected[2, 2], expected[0, 1],
                                            expected[0, 2], expected[1, 2]])
    assert np.isclose(got["ixy"], -1e-4) and np.isclose(got["ixx"], 4e-3)  # matrix entries, not products
    assert req.optional == ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
    assert yaml.safe_load(req.to_yaml()) == req.fields
    assert s.converge_on_inertia
    no_inertia = _with(_out(), identification=Identification(inertia=NOT_IDENTIFIED))
    req, why = build_apply_request(s, no_inertia)
    assert req is None and "inertia" in why
    assert build_apply_request(s, _with(_out(), identification=Identification(inertia=FROM_PRIOR)))[0] is not None
    assert build_apply_request(settings_for_robot("ur5e"), _out(mass=5.5), force=True)[0] is None  # 5 kg rated


def test_ur_request_for_each_definition_of_set_payload():
    """The installed SetPayload decides: before ur_msgs 2.6 (mass and center_of_gravity) the inertia is left
    out, and said so; 2.6 takes every field; 3 (Rolling: one geometry_msgs/Inertia) gets them in ``payload``.
    Franka's request has nothing optional; a type with none of the layouts gets the fields as they are,
    for the message filling to name what is missing."""
    req, _ = build_apply_request(settings_for_robot("ur5e"), _out())
    inertia = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
    old = ("mass", "center_of_gravity")
    fields, left_out = req.fields_for(old)
    assert left_out == list(inertia)
    assert fields == {"mass": req.fields["mass"], "center_of_gravity": req.fields["center_of_gravity"]}
    assert req.fields_for((*old, *inertia, "transition_time")) == (req.fields, [])
    fields, left_out = req.fields_for(("payload", "transition_time"))
    assert left_out == [] and list(fields) == ["payload"]
    payload = fields["payload"]
    assert payload["m"] == req.fields["mass"] and payload["com"] == req.fields["center_of_gravity"]
    assert {k: payload[k] for k in inertia} == {k: req.fields[k] for k in inertia}
    assert req.fields_for(("weight",)) == (req.fields, [])
    franka, _ = build_apply_request(settings_for_robot("panda"), _out())
    assert franka.fields_for(old) == (franka.fields, [])


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
