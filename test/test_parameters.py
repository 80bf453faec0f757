"""Settings as ROS parameters: types, read-only fields, what a change needs (no ROS needed)."""

from __future__ import annotations

import array

import pytest

from payload_estimator.settings import Settings, settings_for_robot
from payload_estimator.supervision.parameters import (
    LIVE,
    NO_CHANGE,
    PARAMETER_TYPES,
    READ_ONLY,
    REBUILD,
    change_effect,
    changed_fields,
    parameter_specs,
    settings_with,
)


def test_one_typed_parameter_per_setting():
    specs = {s.name: s for s in parameter_specs()}
    assert list(specs) == [name for name, _, _ in Settings.describe()]
    assert all(s.type in PARAMETER_TYPES for s in specs.values())
    assert specs["joint_names"].type == "string_array" and specs["joint_names"].default == []
    assert specs["sensor_xyz"].type == "double_array"
    assert specs["max_points"].type == "integer"
    assert specs["gravity"].type == "double"
    assert specs["estimate_bias"].type == "bool"
    assert specs["estimator"].choices == ("ols", "wls", "rls", "rtls", "pmd", "pmd-divide")
    assert "one of: ols, wls" in specs["estimator"].description
    # defaults have the declared type (rclpy refuses a mismatch)
    py = {"bool": bool, "integer": int, "double": float, "string": str, "string_array": list, "double_array": list}
    for s in specs.values():
        assert type(s.default) is py[s.type], s.name


def test_read_only_and_live_parameters():
    specs = {s.name: s for s in parameter_specs()}
    for name in ("robot", "joint_states_topic", "wrench_topic", "imu_topic", "use_builtin_description",
                 "publish_rate_hz"):
        assert specs[name].read_only, name
    assert specs["apply_target"].effect == LIVE
    assert specs["payload_shape"].effect == REBUILD and "restarts the estimate" in specs["payload_shape"].description


def test_defaults_can_come_from_a_preset():
    specs = {s.name: s for s in parameter_specs(settings_for_robot("xarm7"))}
    assert specs["wrench_topic"].default == "/xarm/uf_ftsensor_raw_states"


def test_change_effect():
    s = Settings()
    assert change_effect(s, s) == NO_CHANGE
    assert change_effect(s, s.with_(max_payload_mass=2.0)) == LIVE
    assert change_effect(s, s.with_(max_payload_mass=2.0, cutoff_hz=5.0)) == REBUILD
    assert change_effect(s, s.with_(wrench_topic="/other")) == READ_ONLY
    assert changed_fields(s, s.with_(cutoff_hz=5.0, c1=2.0)) == ["c1", "cutoff_hz"]


def test_settings_with_takes_rclpy_values():
    s = settings_with(Settings(), {"sensor_xyz": array.array("d", [0.0, 0.0, 0.1]), "joint_names": None,
                                   "max_points": 200})
    assert s.sensor_xyz == [0.0, 0.0, 0.1] and s.joint_names == [] and s.max_points == 200
    with pytest.raises(ValueError, match="estimator"):
        settings_with(Settings(), {"estimator": "magic"})
