"""Settings: the single source of every parameter, the robot presets and config/*.yaml."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from payload_estimator.pipeline.build import build_stream, builtin_description, stream_config
from payload_estimator.pipeline.wrench import wrench_to_sensor
from payload_estimator.robots import ROBOT_NAMES, get_robot
from payload_estimator.settings import (
    PRESET_VARIANTS,
    Settings,
    load_parameters_yaml,
    preset_file_name,
    render_parameters_yaml,
    settings_for_robot,
)

CONFIG = Path(__file__).resolve().parents[1] / "config"


@pytest.mark.parametrize("variant", PRESET_VARIANTS)
@pytest.mark.parametrize("robot", list(ROBOT_NAMES))
def test_config_files_are_rendered_from_the_settings(robot, variant):
    path = CONFIG / preset_file_name(robot, variant)
    assert path.read_text() == render_parameters_yaml(robot, variant), "run: python -m payload_estimator.settings"
    s = load_parameters_yaml(path)
    assert s == settings_for_robot(robot, variant)
    assert (s.wrench_source == "joint_torques") == (variant == "joint_torques")
    # every field is a ROS parameter in the file, with its description above it
    params = yaml.safe_load(path.read_text())["payload_estimator"]["ros__parameters"]
    assert set(params) == {name for name, _, _ in Settings.describe()}


def test_real_topic_names_of_the_presets():
    wrench_topic = "/franka_robot_state_broadcaster/external_wrench_in_stiffness_frame"
    assert settings_for_robot("fr3").wrench_topic == wrench_topic
    assert settings_for_robot("fr3").wrench_source == "franka_stiffness"
    assert settings_for_robot("xarm7").joint_states_topic == "/xarm/joint_states"
    assert settings_for_robot("xarm7").wrench_topic == "/xarm/uf_ftsensor_raw_states"


def test_validation_names_the_problem():
    with pytest.raises(ValueError, match="estimator"):
        Settings.from_dict({"estimator": "magic"})
    with pytest.raises(ValueError, match="unknown setting"):
        Settings.from_dict({"cutof_hz": 5.0})
    with pytest.raises(ValueError, match="integer"):
        Settings.from_dict({"max_points": 10.5})
    with pytest.raises(ValueError, match="true or false"):
        Settings.from_dict({"estimate_bias": "yes"})
    with pytest.raises(ValueError, match="cutoff_hz must be a number, got 'abc'"):
        Settings.from_dict({"cutoff_hz": "abc"})  # not float()'s "could not convert string to float"
    with pytest.raises(ValueError, match="max_points must be a number, got 'many'"):
        Settings.from_dict({"max_points": "many"})
    with pytest.raises(ValueError, match="sensor_xyz must be numbers"):
        Settings.from_dict({"sensor_xyz": [0.0, "x", 0.0]})
    with pytest.raises(ValueError, match="3 numbers"):
        Settings.from_dict({"sensor_xyz": [0.0, 1.0]})
    for bad in ([0.1, 0.0], [0.1], [-0.1, 0.01], [float("nan"), 0.01]):
        with pytest.raises(ValueError, match="ft_noise_std"):
            Settings.from_dict({"ft_noise_std": bad})


def test_the_data_sheet_noise_reaches_rtls_through_the_settings():
    from payload_estimator.pipeline.build import build_estimator

    measured = build_estimator(Settings.from_dict({"estimator": "rtls", "track_payload": False}))
    given = build_estimator(Settings.from_dict({"estimator": "rtls", "ft_noise_std": [0.1, 0.005],
                                                "track_payload": False}))
    assert measured.wrench_auto and not given.wrench_auto
    np.testing.assert_allclose(given.wrench_std, [0.1, 0.005])


def test_stream_from_settings_for_each_wrench_source():
    for robot in ROBOT_NAMES:
        s = settings_for_robot(robot)
        stream = build_stream(s, builtin_description(s))
        assert stream.joint_names == get_robot(robot).joint_names
    fr3 = settings_for_robot("fr3", wrench_source="franka_base")
    conv = stream_config(fr3, builtin_description(fr3)).wrench.convention
    assert conv.expressed_in == "fr3_link0" and conv.reference_frame == "fr3_link8" and conv.sign == -1.0


def test_missing_sensor_frame_is_attached_to_the_flange():
    s = settings_for_robot("xarm6", sensor_frame="my_sensor", sensor_xyz=[0.0, 0.0, 0.03])
    cfg = stream_config(s, builtin_description(settings_for_robot("xarm6")))
    assert ("my_sensor", "link_eef", (0.0, 0.0, 0.03), (0.0, 0.0, 0.0)) in cfg.extra_frames
    stream = build_stream(s, builtin_description(settings_for_robot("xarm6")))
    R, p = stream.kinematics.frame_pose(np.zeros((1, 6)), "my_sensor", "link_eef")
    np.testing.assert_allclose(p[0], [0, 0, 0.03], atol=1e-12)
    # a Franka-style reading in K (= flange here) with sign -1 becomes the load's wrench in the sensor frame
    f = np.array([[0.0, 0.0, 5.0]])
    w = wrench_to_sensor(f, np.zeros((1, 3)), stream.wrench_convention, np.eye(3), np.zeros(3))
    np.testing.assert_allclose(w[0, :3], f[0], atol=1e-12)  # N; ft_sensor convention, sign +1
