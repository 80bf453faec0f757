"""Long runs: memory and time per sample of the estimator over an hour of input, and of the node under ROS.

(a) ``--hours H`` (default 1): H hours of simulated time, joint states at 1 kHz
    and the wrench at 1 kHz, through the node's loop as fast as it goes. The
    signals are a MuJoCo run of the catalogue (a Panda holding a claw hammer,
    Nadeau et al.'s wrist motion, 20 s, then back to its start) replayed in a loop by
    :class:`~payload_estimator.sim.live.LiveRun`, exactly as the simulator node
    publishes it (seamlessly: the stamps go on at 1 kHz across each restart).
    Every 10 ms of input is one processing turn; an estimate is taken at
    ``publish_rate_hz``. Two ways in:

    * ``--feed arrays`` (default): the turn's samples as array batches through
      :class:`~payload_estimator.pipeline.driver.Driver` into the
      :class:`~payload_estimator.pipeline.stream.EstimationStream` (what
      ``demo`` and the benchmarks do);
    * ``--feed node``: the turn's samples as ROS messages (``rosbags``
      classes: ``sensor_msgs/JointState``, ``geometry_msgs/WrenchStamped``)
      through the node's own :class:`~payload_estimator.supervision.supervisor.Supervisor`
      (``ros_inbound.feed_many``, the Driver, the outgoing messages and the
      1 Hz diagnostics): the estimator node minus rclpy.

    Every 10 % of the run a row: resident memory (psutil), the Python objects
    alive (the garbage collector's count), CPU time per millisecond of input
    (one joint state and one wrench), and the bytes held by the aligner, the
    health counters, the convergence monitor, the estimator and the driver (a
    deep ``sys.getsizeof`` walk, into closures and deferred computations too;
    numpy arrays by their ``nbytes``). After the warm-up (:data:`WARM_UP_S`, or
    the first 10 % of a longer run), a line through the rows gives each one's growth per hour: the memory is flat
    when the objects alive and the parts do not grow, and the resident memory
    grows by less than :data:`RSS_GROWTH_LIMIT_MB_PER_H`. ``--trace`` also
    lists what grew most from the warm-up to the end, by the line that
    allocated it (tracemalloc; slower). Then ``--stale-minutes`` (default 10)
    of the wrench topic stopped while joint states go on (what the node does
    while a sensor driver is down), one row a minute, and a minute with the
    wrench back.

(b) ``--ros``: ``--minutes M`` (default 10) of the real node under ROS,
    ``ros2 launch payload_estimator sim_demo.launch.py robot:=panda rviz:=false``,
    sampling the estimator node process's resident memory and CPU share every
    minute (psutil), with its growth per hour after the warm-up (a line
    through the samples); at the end SIGINT, and how long the node takes to exit.
    Then ``--signals N`` (default 5) times each: the estimator node while the
    simulator node publishes at it, SIGINT or SIGTERM once it estimates, and
    the time from the signal to the end of its process (``--minutes 0``: only
    this). Needs ROS sourced and the package built (``source install/setup.bash``).

Run:
    python benchmarks/long_run.py                     # (a) one hour, arrays through the Driver
    python benchmarks/long_run.py --feed node         # (a) one hour, messages through the Supervisor
    python benchmarks/long_run.py --hours 0.25 --trace  # (a) and what grows, by the line that allocated it
    python benchmarks/long_run.py --quick             # CI smoke: 15 s of input, a few seconds
    python benchmarks/long_run.py --ros --minutes 10  # (b) the node under ROS
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import types
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from payload_estimator.core.offset_windows import DEFAULT_WINDOW_S, MAX_BATCHES
from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.pipeline.build import build_stream
from payload_estimator.pipeline.driver import PROCESS_PERIOD_S, Driver
from payload_estimator.pipeline.stream import EstimationStream, StreamEstimate
from payload_estimator.settings import Settings, settings_for_robot
from payload_estimator.sim.live import JOINTS, WRENCH, Due, LiveRun, looping_trajectory
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload

STAMP_ORIGIN_S = 1.7e9
"""Stamps are wall-clock-like (the simulator node stamps with wall time): 1.7e9 s + run time."""
WARM_UP_S = MAX_BATCHES * DEFAULT_WINDOW_S + 60.0
"""s of input before the memory counts as warmed up: the estimator keeps its offset windows' batches apart
(up to :data:`~payload_estimator.core.offset_windows.MAX_BATCHES`, then merged two by two), which fill
for ``MAX_BATCHES`` windows, about 11 minutes; then a minute more."""
RSS_GROWTH_LIMIT_MB_PER_H = 2.0
"""What "flat" means for resident memory after the warm-up: it grows by less than this, MB an hour (a line
through the rows; the allocator's own churn moves it by a megabyte or so, up or down). The leak this
benchmark exists for grew by 50 MB an hour."""


def _psutil() -> Any:
    try:
        import psutil
    except ImportError:
        sys.exit("long_run.py needs psutil: pip install -e '.[bench]' (or pip install psutil)")
    return psutil


# ---------------------------------------------------------------------- sizes


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes held by ``obj`` and everything it refers to (numpy arrays by ``nbytes``; a closure by its
    cells, a ``functools.partial`` by its arguments; modules, classes, methods and a function's globals
    are not followed; each object is counted once)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.MethodType, types.BuiltinFunctionType)):
        return 0
    seen.add(id(obj))
    if isinstance(obj, types.FunctionType):  # a closure holds what its cells hold (a deferred computation)
        return sys.getsizeof(obj) + sum(deep_size(_cell(cell), seen) for cell in obj.__closure__ or ())
    if isinstance(obj, functools.partial):
        return sys.getsizeof(obj) + deep_size(obj.func, seen) + deep_size(obj.args, seen) + deep_size(
            obj.keywords, seen)
    if isinstance(obj, np.ndarray):  # a view holds its base's memory
        return sys.getsizeof(obj) + (obj.nbytes if obj.base is None else deep_size(obj.base, seen))
    size = sys.getsizeof(obj)
    if isinstance(obj, (str, bytes, int, float, bool, complex)) or obj is None:
        return size
    if isinstance(obj, dict):
        return size + sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset, deque)):
        return size + sum(deep_size(v, seen) for v in obj)
    if type(obj).__module__.split(".")[0] in ("logging", "builtins", "pinocchio"):
        return size
    if hasattr(obj, "__dict__"):
        size += deep_size(vars(obj), seen)
    for name in getattr(type(obj), "__slots__", ()):
        if hasattr(obj, name):
            size += deep_size(getattr(obj, name), seen)
    return size


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def stream_parts(stream: EstimationStream, driver: Driver) -> dict[str, int]:
    """Bytes held by the parts of the pipeline that see every sample."""
    seen: set[int] = set()  # each object counted once, in the first part that holds it
    return {
        "health": deep_size(stream.health, seen),
        "aligner": deep_size(stream.aligner, seen),
        "convergence": deep_size(stream.convergence, seen),
        "estimator": deep_size(stream.estimator, seen),
        "driver": deep_size({k: v for k, v in vars(driver).items() if k != "stream"}, seen),
    }


# ----------------------------------------------------------------------- feeds


def _arrays_feed(stream: EstimationStream, items: list) -> None:
    """The Driver's feed for array batches: ``(kind, stamps, values..., wall time)``."""
    for kind, t, *values, wall in items:
        if kind == JOINTS:
            q, dq = values
            stream.push_joint_states(t, q, velocities=dq, wall_time=wall)
        else:
            force, torque, frame = values
            stream.push_wrench(t, force, torque, frame_id=frame, wall_time=wall)


@dataclass
class Loop:
    """One way of running turns: ``turn(now, joints, wrench) -> estimate or None``."""

    turn: Callable[[float, Due, Due | None], StreamEstimate | None]
    stream: Callable[[], EstimationStream]
    driver: Callable[[], Driver]
    published: Callable[[], int]
    last_message: Callable[[], Any] = lambda: None


def arrays_loop(live: LiveRun, settings: Settings) -> Loop:
    stream = build_stream(settings, live.run.urdf)
    driver = Driver(stream, _arrays_feed, publish_period_s=1.0 / settings.publish_rate_hz,
                    process_period_s=PROCESS_PERIOD_S)
    run, frame = live.run, live.wrench_frame_id
    count = [0]

    def turn(now: float, joints: Due, wrench: Due | None) -> StreamEstimate | None:
        items: list = []
        if len(joints):
            items.append((JOINTS, STAMP_ORIGIN_S + joints.t, run.joint_q[joints.index], run.joint_dq[joints.index],
                          now))
        if wrench is not None and len(wrench):
            items.append((WRENCH, STAMP_ORIGIN_S + wrench.t, live.wrench_force[wrench.index],
                          live.wrench_torque[wrench.index], frame, now))
        out = driver.tick(now, items)
        count[0] += out is not None
        return out

    return Loop(turn, lambda: stream, lambda: driver, lambda: count[0])


@dataclass
class _NodeState:
    published: int = 0
    next_diagnostics: float = 0.0
    last: Any = None


def node_loop(live: LiveRun, settings: Settings) -> Loop:
    """The node's Supervisor with rosbags messages (the node minus rclpy); diagnostics at 1 Hz."""
    from payload_estimator.io import ros_outbound
    from payload_estimator.io.interfaces import ros_typestore
    from payload_estimator.io.ros_factories import rosbags_factory
    from payload_estimator.supervision.supervisor import Supervisor

    make = rosbags_factory(ros_typestore())
    sup = Supervisor(settings.to_dict(), make)
    sup.on_description(live.run.urdf)
    run, frame = live.run, live.wrench_frame_id
    names = list(run.joint_names)
    state = _NodeState()

    def turn(now: float, joints: Due, wrench: Due | None) -> StreamEstimate | None:
        items: list = []
        if len(joints):
            for i, t in zip(joints.index, joints.t):
                items.append((JOINTS, ros_outbound.joint_state_msg(make, STAMP_ORIGIN_S + t, names, run.joint_q[i],
                                                                   run.joint_dq[i]), now))
        if wrench is not None:
            for i, t in zip(wrench.index, wrench.t):
                items.append((WRENCH, ros_outbound.wrench_stamped_msg(make, STAMP_ORIGIN_S + t, frame,
                                                                      live.wrench_force[i], live.wrench_torque[i]),
                              now))
        items.sort(key=lambda item: item[1].header.stamp.sec + 1e-9 * item[1].header.stamp.nanosec)
        out = sup.tick(now, items)
        if now >= state.next_diagnostics:
            sup.diagnostics(now, now)
            state.next_diagnostics = now + 1.0
        if out is None:
            return None
        state.published += 1
        state.last = out.estimate
        return out.result

    def driver() -> Driver:
        assert sup.driver is not None, sup.status.message
        return sup.driver

    return Loop(turn, lambda: driver().stream, driver, lambda: state.published, lambda: state.last)


# ------------------------------------------------------------------------ run


@dataclass
class Row:
    phase: str
    t_sim: float
    wall: float
    rss_mb: float
    objects: int
    us_per_ms: float
    parts: dict[str, int]
    buffers: dict[str, int]
    published: int
    mass: float
    converged: bool
    stale: str


def _row(phase: str, t_sim: float, wall: float, loop: Loop, cpu_window: float, input_ms: float,
         last: StreamEstimate | None, now: float, process: Any) -> Row:
    gc.collect()
    stream, driver = loop.stream(), loop.driver()
    message = loop.last_message()
    stale = ""
    if message is not None and hasattr(message, "stale"):
        stale = f"{'yes' if message.stale else 'no'} ({message.age:.1f} s)"
    return Row(phase, t_sim, wall, process.memory_info().rss / 2**20, len(gc.get_objects()),
               1e6 * cpu_window / max(input_ms, 1.0), stream_parts(stream, driver),
               stream.aligner.buffer_sizes(), loop.published(),
               last.estimate.mass if last is not None else math.nan, bool(last and last.converged), stale)


def run_simulated(hours: float, stale_minutes: float, feed: str, quick: bool, robot: str, payload: str,
                  estimator: str, trace: bool = False) -> None:
    psutil = _psutil()
    process = psutil.Process()
    payload_spec = get_payload(payload)
    settings = settings_for_robot(robot, estimator=estimator, payload_shape=format_shape_spec(payload_spec.envelope))
    t0 = time.perf_counter()
    motion = looping_trajectory(robot, "wrist", 20.0)  # as the simulator node: then back to its start
    run = simulate(robot=robot, payload=payload, trajectory=motion, duration=motion.duration, noise="moderate", seed=0)
    live = LiveRun(run, settings, loop=True)
    simulated_s = time.perf_counter() - t0
    loop = {"arrays": arrays_loop, "node": node_loop}[feed](live, settings)

    total_s = hours * 3600.0
    turns = int(round(total_s / PROCESS_PERIOD_S))
    checkpoints = {int(round(turns * k / 10)) for k in range(1, 11)}
    stale_s = stale_minutes * 60.0
    stale_every = max(1, int(round(min(60.0, stale_s / 2 if stale_s else 60.0) / PROCESS_PERIOD_S)))
    stale_turns = int(round(stale_s / PROCESS_PERIOD_S))
    back_turns = int(round(min(60.0, max(stale_s, 1.0)) / PROCESS_PERIOD_S)) if stale_s else 0

    rows: list[Row] = []
    last: StreamEstimate | None = None
    cpu_mark, wall_mark, input_mark = time.process_time(), time.perf_counter(), 0.0
    wall_start = wall_mark
    input_ms = 0.0
    k = 0
    t_end = 0.0

    def mark(phase: str, now: float, t_run: float) -> None:
        nonlocal cpu_mark, wall_mark, input_mark
        cpu = time.process_time()
        rows.append(_row(phase, t_run, time.perf_counter() - wall_start, loop, cpu - cpu_mark,
                         input_ms - input_mark, last, now, process))
        cpu_mark, wall_mark, input_mark = time.process_time(), time.perf_counter(), input_ms

    def turns_of(n: int, with_wrench: bool) -> Iterator[tuple[float, float]]:
        nonlocal k, input_ms, last
        for _ in range(n):
            k += 1
            t_run = k * PROCESS_PERIOD_S
            due = live.due(t_run)
            joints, wrench = due[JOINTS], (due[WRENCH] if with_wrench else None)
            now = STAMP_ORIGIN_S + t_run  # the receive time: the stamps' clock, as fast as it goes
            out = loop.turn(now, joints, wrench)
            last = out if out is not None else last
            input_ms += len(joints)
            yield now, t_run

    if trace:
        tracemalloc.start(12)
    snapshots = []
    for now, t_run in turns_of(turns, True):
        if k in checkpoints:
            mark("running", now, t_run)
            t_end = t_run
            if trace and len(snapshots) < 2 and (not snapshots or k == max(checkpoints)):
                snapshots.append(tracemalloc.take_snapshot())
    for i, (now, t_run) in enumerate(turns_of(stale_turns, False), start=1):
        if i % stale_every == 0 or i == stale_turns:
            mark("wrench stopped", now, t_run)
    for i, (now, t_run) in enumerate(turns_of(back_turns, True), start=1):
        if i == back_turns:
            mark("wrench back", now, t_run)
    _print_simulated(rows, hours, feed, robot, payload, estimator, simulated_s, t_end, quick)
    if len(snapshots) == 2:
        _print_growth(*snapshots)
    diag = loop.stream().diagnostics()
    if "payload_changes" in diag:  # track_payload: one payload all along, every flag is a false alarm
        print(f"\nFollowing the payload (track_payload): {diag['payload_changes']} change(s), {diag['contacts']} "
              f"contact(s), {diag['held_out_samples']} sample(s) held out, over {hours * 60:g} min of one payload "
              f"(the looped run restarts its motion every {live.period:.0f} s).")


def _print_simulated(rows: list[Row], hours: float, feed: str, robot: str, payload: str, estimator: str,
                     simulated_s: float, t_end: float, quick: bool) -> None:
    truth = get_payload(payload).mass
    how = {"arrays": "array batches through the Driver",
           "node": "ROS messages (rosbags) through the node's Supervisor"}[feed]
    print(f"\nLong run: {hours * 60:g} min of simulated time, {robot} holding the {payload} "
          f"({truth:.3f} kg), {estimator}, joint states and wrench at 1 kHz, {how}; "
          f"the MuJoCo run (20 s of motion and the way back, looped seamlessly) simulated in {simulated_s:.1f} s.\n")
    parts = list(rows[0].parts)
    print("| phase | input time (min) | wall (s) | RSS (MB) | objects alive | CPU µs per ms of input | "
          + " | ".join(f"{p} (kB)" for p in parts)
          + " | aligner rows (joints/wrench) | estimates | mass (kg) | converged |"
          + (" stale (age) |" if feed == "node" else ""))
    print("|---" * (11 + len(parts) + (feed == "node")) + "|")
    for r in rows:
        buffers = f"{r.buffers.get(JOINTS, 0)}/{r.buffers.get(WRENCH, 0)}"
        print(f"| {r.phase} | {r.t_sim / 60:.1f} | {r.wall:.0f} | {r.rss_mb:.1f} | {r.objects} | {r.us_per_ms:.1f} | "
              + " | ".join(f"{r.parts[p] / 1024:.1f}" for p in parts)
              + f" | {buffers} | {r.published} | {r.mass:.4f} | {'yes' if r.converged else 'no'} |"
              + (f" {r.stale} |" if feed == "node" else ""))
    running = [r for r in rows if r.phase == "running"]
    warm = max(WARM_UP_S, running[0].t_sim) if running else WARM_UP_S
    after = [r for r in running if r.t_sim > warm - 1e-9]
    after = after if len(after) >= 2 else running[-2:]
    hours_after = [r.t_sim / 3600.0 for r in after]
    rss = [r.rss_mb for r in after]
    rss_per_h = per_hour(hours_after, rss)
    objects_per_h = per_hour(hours_after, [r.objects for r in after])
    us = [r.us_per_ms for r in after]
    flat = rss_per_h <= RSS_GROWTH_LIMIT_MB_PER_H
    print(f"\nAfter the warm-up ({after[0].t_sim / 60:.0f} min on): RSS {min(rss):.1f}-{max(rss):.1f} MB, growing "
          f"{rss_per_h:+.1f} MB an hour ({'flat' if flat else 'GROWING'}: limit {RSS_GROWTH_LIMIT_MB_PER_H:g} MB an "
          f"hour); objects alive {min(r.objects for r in after)}-{max(r.objects for r in after)}, "
          f"{objects_per_h:+.0f} an hour; CPU per ms of input {min(us):.1f}-{max(us):.1f} µs "
          f"(last/first {us[-1] / us[0]:.2f}).")
    for p in parts:
        sizes = [r.parts[p] for r in after]
        print(f"  {p}: {min(sizes) / 1024:.1f}-{max(sizes) / 1024:.1f} kB while running, "
              f"{per_hour(hours_after, sizes) / 1024:+.1f} kB an hour"
              + (f", {max(r.parts[p] for r in rows) / 1024:.1f} kB at most overall" if len(rows) > len(running)
                 else ""))
    if quick:
        print("(--quick: a smoke run; the figures above say nothing about long-run growth)")


def per_hour(hours: list[float], values: list[float]) -> float:
    """Slope of the least-squares line through ``values`` at ``hours``, per hour (0 for fewer than 2 rows)."""
    if len(hours) < 2 or max(hours) == min(hours):
        return 0.0
    return float(np.polyfit(hours, values, 1)[0])


def _print_growth(warm: Any, end: Any, top: int = 8) -> None:
    """What grew most from the warm-up to the end of the run, by the line that allocated it (tracemalloc)."""
    grown: dict[str, list[int]] = {}
    for stat in end.compare_to(warm, "traceback"):  # by the package's innermost line on the way
        frame = next((f for f in stat.traceback if "payload_estimator" in f.filename), stat.traceback[0])
        where = f"{frame.filename.split('payload_estimator/')[-1]}:{frame.lineno}"
        size, count = grown.setdefault(where, [0, 0])
        grown[where] = [size + stat.size_diff, count + stat.count_diff]
    print(f"\nGrowth from the warm-up to the end of the run, by the package's line that allocated it (tracemalloc, "
          f"top {top}; the CPU figures above are tracemalloc's too):")
    for where, (size, count) in sorted(grown.items(), key=lambda item: -item[1][0])[:top]:
        print(f"  {size / 1024:+.1f} kB ({count:+d} blocks) {where}")


# ---------------------------------------------------------------------- (b) ROS


def _find(process: Any, needle: str) -> Any:
    for child in process.children(recursive=True):
        try:
            if any(needle in part for part in child.cmdline()):
                return child
        except Exception:  # noqa: BLE001 - a process that ended meanwhile
            continue
    return None


def run_ros(minutes: float, robot: str, quick: bool) -> None:
    psutil = _psutil()
    if not quick and not os.environ.get("AMENT_PREFIX_PATH"):
        sys.exit("--ros needs ROS 2 sourced and the package built (source install/setup.bash)")
    period = 60.0 if not quick else 5.0
    samples = int(round(minutes * 60.0 / period))
    command = ["ros2", "launch", "payload_estimator", "sim_demo.launch.py", f"robot:={robot}", "rviz:=false"]
    log = open(os.environ.get("LONG_RUN_LOG", os.devnull), "w")  # noqa: SIM115 - closed below
    launch = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    launcher = psutil.Process(launch.pid)
    rows = []
    try:
        estimator = sim = None
        deadline = time.monotonic() + 60.0
        while (estimator is None or sim is None) and time.monotonic() < deadline:
            time.sleep(0.5)
            estimator = estimator or _find(launcher, "estimator_node")
            sim = sim or _find(launcher, "sim_node")
        if estimator is None:
            sys.exit(f"no estimator_node process under {' '.join(command)}")
        marks = {p.pid: (time.monotonic(), sum(p.cpu_times()[:2])) for p in (estimator, sim) if p is not None}
        start = time.monotonic()
        for i in range(1, samples + 1):
            time.sleep(max(0.0, start + i * period - time.monotonic()))
            row: list[float] = [i * period / 60.0]
            for p in (estimator, sim):
                if p is None:
                    row += [math.nan, math.nan]
                    continue
                now, cpu = time.monotonic(), sum(p.cpu_times()[:2])
                t_mark, cpu_mark = marks[p.pid]
                marks[p.pid] = (now, cpu)
                row += [p.memory_info().rss / 2**20, 100.0 * (cpu - cpu_mark) / (now - t_mark)]
            row.append(estimator.num_threads())
            rows.append(row)
        t_int = time.monotonic()
        os.killpg(launch.pid, signal.SIGINT)
        try:
            estimator.wait(timeout=15.0)
            exit_after = time.monotonic() - t_int
        except psutil.TimeoutExpired:
            exit_after = math.nan
        launch.wait(timeout=30.0)
    finally:
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)
        log.close()
    print(f"\nThe estimator node under ROS for {minutes:g} min: {' '.join(command)} "
          f"(psutil every {period:g} s; CPU in % of one core over the interval).\n")
    print("| time (min) | estimator RSS (MB) | estimator CPU (%) | simulator RSS (MB) | simulator CPU (%) "
          "| estimator threads |")
    print("|---|---|---|---|---|---|")
    for t, rss, cpu, sim_rss, sim_cpu, threads in rows:
        print(f"| {t:.0f} | {rss:.1f} | {cpu:.1f} | {sim_rss:.1f} | {sim_cpu:.1f} | {threads:.0f} |")
    kept = [r for r in rows if r[0] * 60.0 > WARM_UP_S - 1e-9]
    kept = kept if len(kept) >= 2 else rows[-2:]
    after = [r[1] for r in kept]
    growth = per_hour([r[0] / 60.0 for r in kept], after)
    print(f"\nAfter the warm-up ({kept[0][0]:.0f} min on): estimator RSS {min(after):.1f}-{max(after):.1f} MB, "
          f"growing {growth:+.1f} MB an hour ({'flat' if growth <= RSS_GROWTH_LIMIT_MB_PER_H else 'GROWING'}: limit "
          f"{RSS_GROWTH_LIMIT_MB_PER_H:g} MB an hour). After SIGINT the estimator node exited in {exit_after:.2f} s "
          f"(launch exit status {launch.returncode}).")


def signal_exits(trials: int) -> None:
    """Start the estimator node ``trials`` times per signal while the simulator node publishes a Panda
    run at it (PMD solving at 10 Hz); signal it 3 s after it estimates; time from the signal to the end
    of its process. A node still running 5 s after the signal gets SIGTERM (a signal was lost)."""
    from ament_index_python.packages import get_package_prefix, get_package_share_directory

    config = os.path.join(get_package_share_directory("payload_estimator"), "config", "panda.yaml")
    lib = os.path.join(get_package_prefix("payload_estimator"), "lib", "payload_estimator")
    # the installed executables themselves (``ros2 run`` would be a parent process of its own)
    command = [os.path.join(lib, "estimator_node"), "--ros-args", "--params-file", config,
               "-p", "use_builtin_description:=true"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", RCUTILS_LOGGING_BUFFERED_STREAM="0")
    sim = subprocess.Popen([os.path.join(lib, "sim_node")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=env)
    rows = []
    try:
        time.sleep(8.0)  # the simulator simulates, then publishes
        for signum in (signal.SIGINT, signal.SIGTERM):
            times: list[float] = []
            codes: set[int] = set()
            first = 0
            for _ in range(trials):
                node = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=env)
                try:
                    assert node.stdout is not None
                    for line in node.stdout:  # until it estimates
                        if "estimating with" in line:
                            break
                    threading.Thread(target=node.stdout.read, daemon=True).start()  # keep the pipe flowing
                    time.sleep(3.0)
                    t0 = time.monotonic()
                    node.send_signal(signum)
                    try:
                        codes.add(node.wait(timeout=5.0))
                        first += 1
                    except subprocess.TimeoutExpired:
                        node.send_signal(signal.SIGTERM)
                        codes.add(node.wait(timeout=10.0))
                    times.append(time.monotonic() - t0)
                finally:
                    if node.poll() is None:
                        node.kill()
                        node.wait()
            rows.append((signum.name, trials, first, sorted(codes), min(times), float(np.median(times)),
                         max(times)))
    finally:
        sim.send_signal(signal.SIGINT)
        try:
            sim.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            sim.kill()
    print("\nShutdown of the estimator node (lib/payload_estimator/estimator_node, PMD) while the simulator "
          f"publishes at it, {trials} times per signal, from the signal to the end of its process "
          "(a node still running 5 s after the signal gets SIGTERM):\n")
    print("| signal | runs | ended by it | exit status | min (s) | median (s) | max (s) |")
    print("|---|---|---|---|---|---|---|")
    for name, n, ended, statuses, lo, med, hi in rows:
        print(f"| {name} | {n} | {ended} | {', '.join(map(str, statuses))} | {lo:.2f} | {med:.2f} | {hi:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=1.0, help="simulated input time of (a), h")
    ap.add_argument("--stale-minutes", type=float, default=10.0, help="wrench stopped after (a)'s run, min")
    ap.add_argument("--feed", choices=["arrays", "node"], default="arrays", help="how (a)'s input enters")
    ap.add_argument("--robot", default="panda")
    ap.add_argument("--payload", default="claw_hammer")
    ap.add_argument("--estimator", default="pmd")
    ap.add_argument("--ros", action="store_true", help="(b): the real node under ROS instead")
    ap.add_argument("--minutes", type=float, default=10.0, help="length of (b), min")
    ap.add_argument("--signals", type=int, default=5, help="(b): SIGINT and SIGTERM trials of the node alone")
    ap.add_argument("--quick", action="store_true", help="a smoke run of a few seconds (CI)")
    ap.add_argument("--trace", action="store_true", help="(a): what grew most, by where it was allocated (slower)")
    args = ap.parse_args()
    if args.ros:
        if args.minutes > 0:
            run_ros(args.minutes if not args.quick else 0.5, args.robot, args.quick)
        if args.signals > 0:
            signal_exits(args.signals if not args.quick else 1)
        return
    hours, stale = (args.hours, args.stale_minutes) if not args.quick else (15.0 / 3600.0, 0.1)
    run_simulated(hours, stale, args.feed, args.quick, args.robot, args.payload, args.estimator, args.trace)


if __name__ == "__main__":
    main()
