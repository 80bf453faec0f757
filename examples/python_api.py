"""Estimate a payload in Python, without ROS, from joint states and a wrench you logged yourself.

Two ways in, both shown:

1. Robot level: your arm's joint positions (any rate) and your F/T sensor's wrench (any rate, its own
   clock), plus the robot's URDF. The stream aligns, filters and differentiates them and computes the
   sensor frame's motion with pinocchio, exactly as the ROS node does.
2. Sensor level: if you already have the sensor frame's motion (accelerations, rates, gravity in the
   sensor frame), feed ``SensorSamples`` to an estimator directly.

Here a simulated Panda stands in for your logs (replace ``logs`` with your arrays). Run it from the
repository root with the ``sim`` extra installed: ``python examples/python_api.py``.
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.estimators import make_estimator
from payload_estimator.core.shapes import parse_shape_spec, sample_points
from payload_estimator.outputs.handover import check_handover
from payload_estimator.outputs.urdf import urdf_inertial
from payload_estimator.pipeline.build import build_stream
from payload_estimator.settings import settings_for_robot

SHAPE = "cylinder:0.015,0.28@0,0,0.14+box:0.1,0.03,0.03@0.02,0,0.265"
"""The claw hammer: its handle and its head. A shape that does not contain the payload (try the handle
alone, ``cylinder:0.015,0.28@0,0,0.14``) is caught: model fit poor, nothing handed over."""


def logs():
    """Stand-in for your recordings: (urdf, sensor frame, joint names, joint t, q, wrench t, wrench)."""
    from payload_estimator.sim.mujoco_sim import simulate

    run = simulate(robot="panda", payload="claw_hammer", duration=10.0, seed=0)
    return (run.urdf, run.sensor_frame, list(run.joint_names), run.joint_t, run.joint_q, run.wrench_t,
            run.wrench_in_sensor)


def robot_level() -> None:
    """Estimate from joint states and a wrench through the stream, as the ROS node does; print the result."""
    urdf, sensor_frame, joint_names, joint_t, q, wrench_t, wrench = logs()
    settings = settings_for_robot(
        "panda",
        sensor_frame=sensor_frame,  # a frame of the URDF (or give sensor_xyz/sensor_rpy from the flange)
        wrench_source="ft_sensor",  # a wrist F/T sensor, reporting in sensor_frame
        wrench_sign=1.0,  # +1: it reports the payload's wrench on it (a payload at rest reads f = m g)
        payload_shape=SHAPE,  # for PMD: what contains the payload, in the sensor frame, m
    )
    stream = build_stream(settings, urdf)
    for k in range(0, len(joint_t), 100):  # in chunks, as they would arrive (any chunk size works)
        stream.push_joint_states(joint_t[k:k + 100], q[k:k + 100], names=joint_names)
        in_chunk = (wrench_t >= joint_t[k]) & (wrench_t < joint_t[min(k + 100, len(joint_t) - 1)])
        stream.push_wrench(wrench_t[in_chunk], wrench[in_chunk, :3], wrench[in_chunk, 3:])
        stream.process()
        out = stream.update_estimate()  # call it at your publish rate; it advances the convergence check
    assert out is not None
    est = out.estimate
    print(f"mass {est.mass:.4f} ± {est.mass_std:.4f} kg, COM {np.round(1e3 * est.com, 1)} ± "
          f"{np.round(1e3 * est.com_std, 1)} mm ({settings.sensor_frame})")
    print(f"identified: {est.identification.to_dict()}; model fit: {est.model_fit.label}")
    print(f"mass and COM converged: {out.mass_com_converged}; everything: {out.converged} ({out.reason})")
    handover = check_handover(est, inertia=True)  # the same check the URDF fragment and ~/apply pass
    if handover:
        print(urdf_inertial(out.params_in_flange, frame=stream.config.flange_frame))
    else:
        print("not safe to hand over:", handover.status)


def sensor_level() -> None:
    """Estimate from sensor-frame samples with an estimator directly; print the result."""
    from payload_estimator.core.noise import TABLE_II
    from payload_estimator.sim.payloads import get_payload
    from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

    payload = get_payload("claw_hammer")
    samples, _ = simulate_wrist(payload.params, WristTrajectory(mean_ang_vel=1.0), duration=10.0,
                                noise=TABLE_II["moderate"], rng=np.random.default_rng(0))
    # your data: SensorSamples(t, lin_acc, ang_vel, ang_acc, gravity, wrench), all (N, 3)/(N, 6) in the sensor frame
    estimator = make_estimator("pmd", sample_points(parse_shape_spec(SHAPE)))
    estimator.update(samples)  # any batch size, as often as you like
    est = estimator.estimate()
    print(f"sensor level: mass {est.mass:.4f} ± {est.mass_std:.4f} kg (truth {payload.mass:.4f}), "
          f"model fit {est.model_fit.label}, hand-over: {check_handover(est).status}")


if __name__ == "__main__":
    robot_level()
    sensor_level()
