"""CPU of the whole estimator node process under ROS, fed 1 kHz joint states and a 1 kHz wrench.

The real estimator node (the installed ``lib/payload_estimator/estimator_node`` with
``config/<robot>.yaml``, the built-in robot description and the payload's envelope) is
started for each case; a publisher process of this script replays a simulated run
(MuJoCo, ``--robot`` holding ``--payload``, Nadeau et al.'s wrist motion, moderate noise,
seed 0) as the robot's driver publishes it: one ``sensor_msgs/JointState`` (names,
positions, velocities, efforts) and one ``geometry_msgs/WrenchStamped`` every
millisecond, on the robot's real topics, best effort. The messages are made and
serialised before the first one goes out, with stamps of a fixed origin, so that every
case receives byte for byte the same input.

After ``--warmup`` s of input the estimator's process (all its threads; not the
publisher, not this script) is sampled with psutil for ``--seconds`` s: its mean CPU
in % of one core and the highest 1 s share. After the last message and a settling
second, what the node took in is checked against what was published: the samples
per stream it reports on ``/diagnostics`` (": inputs"), what it rejected (": rejected
input"), and its last ``~/estimate`` (mass, COM, ``samples_used``), which must be the
same for every case (within the replay's noise: a different split of the input into
10 ms turns).

A case is a label, optionally another install of the package (e.g. a workspace
built from an older commit, for a before/after table) and parameter overrides:
``--case LABEL[@PREFIX][:name=value,...]``; ``loop_period_s=P`` is no parameter but the
node's loop period (``estimator_node.LOOP_PERIOD_S``, set before ``main()``).
``--repeat N`` runs the cases N times,
interleaved, so that a machine whose load changes (other builds) weighs on each alike.

Run (ROS 2 sourced, the package built and sourced):
    python benchmarks/node_cpu.py                              # the node as installed, 30 s
    python benchmarks/node_cpu.py --case ols:estimator=ols --case pmd:estimator=pmd
    python benchmarks/node_cpu.py --case before@$HOME/old_ws/install/payload_estimator --case after --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

STAMP_ORIGIN_S = 100.0
"""Header stamps of the replay: this + the run's time, s (the same bytes in every case)."""
SETTLE_S = 2.0
"""Time the node gets after the last message before its final estimate is read, s."""


def _thread_times(pid: int) -> dict[int, tuple[str, float]]:
    """CPU time (user + system, s) of each thread of process ``pid``, with its name (Linux ``comm``:
    Cyclone DDS names its threads, Python threads carry the process's name)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            continue
    return out


def _by_name(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]], seconds: float) -> str:
    """CPU share (% of one core) per thread name over the interval, the largest first."""
    shares: dict[str, float] = {}
    for tid, (name, cpu) in after.items():
        shares[name] = shares.get(name, 0.0) + 100.0 * (cpu - before.get(tid, (name, 0.0))[1]) / seconds
    return ", ".join(f"{name} {share:.1f}" for name, share in sorted(shares.items(), key=lambda kv: -kv[1])
                     if share >= 0.05)


def _psutil() -> Any:
    try:
        import psutil
    except ImportError:
        sys.exit("node_cpu.py needs psutil: pip install -e '.[bench]' (or pip install psutil)")
    return psutil


# ---------------------------------------------------------------- the publisher process


def publish(robot: str, payload: str, duration: float) -> None:
    """The publisher process: simulate, serialise, wait for the estimator, publish at 1 kHz, report counts."""
    import rclpy
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from payload_estimator.ros.estimator_node import INPUT_QOS
    from payload_estimator.settings import settings_for_robot
    from payload_estimator.sim.live import LiveRun
    from payload_estimator.sim.mujoco_sim import simulate

    settings = settings_for_robot(robot)
    run = simulate(robot=robot, payload=payload, duration=duration, noise="moderate", seed=0)
    live = LiveRun(run, settings, loop=False)

    def stamp(t: float) -> Time:
        ns = int(round((STAMP_ORIGIN_S + t) * 1e9))
        return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)

    names = list(run.joint_names)
    joints, wrenches = [], []
    for i, t in enumerate(run.joint_t):
        msg = JointState(name=names, position=run.joint_q[i].tolist(), velocity=run.joint_dq[i].tolist(),
                         effort=run.joint_effort[i].tolist())
        msg.header.stamp = stamp(float(t))
        joints.append((float(t), serialize_message(msg)))
    for i, t in enumerate(run.wrench_t):
        msg = WrenchStamped()
        msg.header.stamp, msg.header.frame_id = stamp(float(t)), live.wrench_frame_id
        f, tau = live.wrench_force[i], live.wrench_torque[i]
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(v) for v in f)
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (float(v) for v in tau)
        wrenches.append((float(t), serialize_message(msg)))

    rclpy.init()
    node = rclpy.create_node("node_cpu_publisher")
    pubs = [node.create_publisher(JointState, settings.joint_states_topic, INPUT_QOS),
            node.create_publisher(WrenchStamped, settings.wrench_topic, INPUT_QOS)]
    print("ready", flush=True)
    while min(p.get_subscription_count() for p in pubs) < 1:  # the estimator (and this script's nothing)
        time.sleep(0.05)
    sys.stdin.readline()  # "go" from the benchmark once the estimator runs
    # one merged schedule, in time order: (t, publisher, bytes)
    events = sorted([(t, 0, b) for t, b in joints] + [(t, 1, b) for t, b in wrenches], key=lambda e: (e[0], e[1]))
    t0 = events[0][0]
    start = time.monotonic()
    sent = [0, 0]
    k = 0
    while k < len(events):
        due = time.monotonic() - start + t0
        while k < len(events) and events[k][0] <= due:
            _, which, data = events[k]
            pubs[which].publish(data)
            sent[which] += 1
            k += 1
        if k < len(events):
            time.sleep(max(0.0, events[k][0] - (time.monotonic() - start + t0)))
    print(json.dumps({"joint_states": sent[0], "wrench": sent[1], "seconds": time.monotonic() - start}), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


# ---------------------------------------------------------------- one case


class _Listener:
    """The estimator's last estimate and diagnostics, heard by this script (a node of its own)."""

    def __init__(self) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor

        from payload_estimator.msg import PayloadEstimate

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("node_cpu_listener", context=self.context)
        self.estimate: Any = None
        self.diagnostics: Any = None
        self.node.create_subscription(PayloadEstimate, "/payload_estimator/estimate", self._on_estimate, 10)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except Exception:  # noqa: BLE001 - shutting down
                return

    def _on_estimate(self, msg: Any) -> None:
        self.estimate = msg

    def _on_diagnostics(self, msg: Any) -> None:
        if any(s.name.endswith(": inputs") for s in msg.status):
            self.diagnostics = msg

    def values(self, suffix: str) -> dict[str, str]:
        if self.diagnostics is None:
            return {}
        for status in self.diagnostics.status:
            if status.name.endswith(suffix):
                return {kv.key: kv.value for kv in status.values}
        return {}

    def close(self) -> None:
        """Stop the spinning thread before anything it uses goes: the context first (its loop ends within
        0.1 s), then the thread is joined, then the executor and the node. Destroying them under a thread
        still in ``spin_once`` let the process abort at exit ("terminate called without an active
        exception")."""
        import rclpy

        rclpy.try_shutdown(context=self.context)
        self.thread.join(timeout=5.0)
        self.executor.shutdown()
        self.node.destroy_node()


def _environment(prefix: Path) -> dict[str, str]:
    """This environment with the package of ``prefix`` first (its Python package and libraries)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for name, path in (("PYTHONPATH", prefix / "lib" / python / "site-packages"), ("LD_LIBRARY_PATH", prefix / "lib"),
                       ("AMENT_PREFIX_PATH", prefix)):
        env[name] = os.pathsep.join([str(path)] + [p for p in env.get(name, "").split(os.pathsep) if p])
    return env


def run_case(label: str, overrides: dict[str, str], args: argparse.Namespace, prefix: Path, shape: str) -> dict:
    psutil = _psutil()
    config = prefix / "share" / "payload_estimator" / "config" / f"{args.robot}.yaml"
    env = _environment(prefix)
    log_path = Path(args.log_dir) / f"node_cpu_{label}.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    overrides = dict(overrides)
    loop_period = overrides.pop("loop_period_s", None)
    executable = [str(prefix / "lib" / "payload_estimator" / "estimator_node")]
    if loop_period is not None:
        executable = [sys.executable, "-c", "import sys; from payload_estimator.ros import estimator_node as n; "
                      f"n.LOOP_PERIOD_S = {float(loop_period)!r}; n.main(sys.argv)"]
    command = [*executable, "--ros-args",
               "--params-file", str(config), "-p", "use_builtin_description:=true", "-p", f"payload_shape:={shape}"]
    for name, value in overrides.items():
        command += ["-p", f"{name}:={value}"]
    node = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd="/")  # not a checkout
    publisher = subprocess.Popen([sys.executable, __file__, "--publisher", "--robot", args.robot, "--payload",
                                  args.payload, "--duration", str(args.warmup + args.seconds + 1.0)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    listener = _Listener()
    try:
        assert publisher.stdout is not None and publisher.stdin is not None
        if publisher.stdout.readline().strip() != "ready":
            sys.exit("the publisher did not start")
        deadline = time.monotonic() + 60.0
        while "estimating with" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        process = psutil.Process(node.pid)
        publisher.stdin.write("go\n")
        publisher.stdin.flush()
        time.sleep(args.warmup)
        load = os.getloadavg()[0]
        shares = []
        threads0 = _thread_times(node.pid)
        cpu0, t0 = sum(process.cpu_times()[:2]), time.monotonic()
        cpu_prev, t_prev = cpu0, t0
        for i in range(1, int(args.seconds) + 1):
            time.sleep(max(0.0, t0 + i - time.monotonic()))
            cpu, now = sum(process.cpu_times()[:2]), time.monotonic()
            shares.append(100.0 * (cpu - cpu_prev) / (now - t_prev))
            cpu_prev, t_prev = cpu, now
        mean = 100.0 * (cpu_prev - cpu0) / (t_prev - t0)
        by_thread = _by_name(threads0, _thread_times(node.pid), t_prev - t0)
        threads = process.num_threads()
        sent = json.loads(publisher.stdout.readline())
        publisher.wait(timeout=30.0)
        time.sleep(SETTLE_S)
        estimate = listener.estimate
        inputs, rejected = listener.values(": inputs"), listener.values(": rejected input")
    finally:
        node.send_signal(signal.SIGINT)
        try:
            node.wait(timeout=15.0)
        except subprocess.TimeoutExpired:
            node.kill()
        if publisher.poll() is None:
            publisher.kill()
        listener.close()
        log.close()
    return {
        "label": label, "load": load, "mean": mean, "max": max(shares), "threads": threads, "sent": sent,
        "by_thread": by_thread,
        "received": (inputs.get("joint_states samples", "?"), inputs.get("wrench samples", "?")),
        "rejected": {k[len("total "):]: v for k, v in rejected.items() if k.startswith("total ")},
        "estimate": estimate,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robot", default="panda")
    ap.add_argument("--payload", default="claw_hammer")
    ap.add_argument("--seconds", type=float, default=30.0, help="CPU sampled for this long, s")
    ap.add_argument("--warmup", type=float, default=5.0, help="input before the sampling starts, s")
    ap.add_argument("--case", action="append", default=[],
                    help="LABEL[@PREFIX][:name=value,...]: a label, the install prefix of the package to run "
                         "(default: the sourced one) and parameter overrides (repeatable; default: one case)")
    ap.add_argument("--repeat", type=int, default=1, help="run the cases this many times, interleaved")
    ap.add_argument("--log-dir", default="/tmp", help="where the node's log of each case goes")
    ap.add_argument("--publisher", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--duration", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.publisher:
        publish(args.robot, args.payload, args.duration)
        return
    if not os.environ.get("AMENT_PREFIX_PATH"):
        sys.exit("node_cpu.py needs ROS 2 sourced and the package built (source install/setup.bash)")
    from ament_index_python.packages import get_package_prefix

    from payload_estimator.core.shapes import format_shape_spec
    from payload_estimator.sim.payloads import get_payload

    installed = Path(get_package_prefix("payload_estimator"))
    shape = format_shape_spec(get_payload(args.payload).envelope)
    cases = []
    for spec in args.case or ["installed"]:
        head, _, rest = spec.partition(":")
        label, _, prefix = head.partition("@")
        cases.append((label, Path(prefix).expanduser() if prefix else installed,
                      dict(kv.split("=", 1) for kv in rest.split(",") if kv)))
    rows = []
    for _ in range(max(1, args.repeat)):
        for label, prefix, overrides in cases:
            rows.append(run_case(label, overrides, args, prefix, shape))
            print(f"{label}: {rows[-1]['mean']:.1f} % (load {rows[-1]['load']:.2f})", file=sys.stderr, flush=True)

    cores = os.cpu_count()
    for label, prefix, _ in cases:
        print(f"{label}: {prefix}")
    print(f"\nThe estimator node, {args.robot} holding {args.payload}: 1 kHz joint states + 1 kHz "
          f"wrench; CPU of its process (all threads) in % of one core over {args.seconds:g} s after "
          f"{args.warmup:g} s of input; {cores} cores; load: 1-min load average at the start of the sampling.\n")
    print("| case | load | CPU mean (%) | CPU max 1 s (%) | threads | published joints / wrench "
          "| taken in joints / wrench | rejected | samples_used | mass (kg) | COM (mm) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        est = r["estimate"]
        if est is not None:
            com = np.array([est.com.x, est.com.y, est.com.z]) * 1e3
            est_cols = f"{est.samples_used} | {est.mass:.4f} | {com[0]:.2f}, {com[1]:.2f}, {com[2]:.2f}"
        else:
            est_cols = "- | - | -"
        rejected = ", ".join(f"{k} {v}" for k, v in r["rejected"].items()) or "none"
        print(f"| {r['label']} | {r['load']:.2f} | {r['mean']:.1f} | {r['max']:.1f} | {r['threads']} "
              f"| {r['sent']['joint_states']} / {r['sent']['wrench']} | {r['received'][0]} / {r['received'][1]} "
              f"| {rejected} | {est_cols} |")
    print("\nCPU by thread (% of one core; Python threads are named after the process, Cyclone DDS's after "
          "their role):\n")
    for r in rows:
        print(f"* {r['label']}: {r['by_thread']}")


if __name__ == "__main__":
    main()
