"""One SIGINT ends every launch file promptly and cleanly, as a Ctrl-C in the terminal does.

``ros2 launch`` is started as a user starts it, in a process group of its own (a terminal's
foreground job), and the whole group gets one SIGINT, as Ctrl-C gives it: ``ros2 launch`` itself,
the simulator and the estimator at once. Each run then must end

* with ``ros2 launch``'s exit status 0 and every node's "process has finished cleanly" (exit code 0);
* without "died" (a node's traceback and exit code -2, or -11), "escalating to 'SIGTERM'" (a node
  still running ``sigterm_timeout`` after the signal), "Task was destroyed but it is pending" (launch's
  asyncio left a timer behind), a traceback, or "again, ignoring" (a second SIGINT): ``ros2 launch``
  must end by itself within :data:`EXIT_WITHIN_S`.

Cases (:data:`CASES`): ``sim_demo.launch.py`` while its nodes still load their modules, while the
estimator estimates (in a terminal, and from a script, where ``ros2 launch`` sends each node a SIGINT of
its own as well), with ``scenario:=identify`` (the simulator's multi-threaded executor and its action
server), and ``estimator.launch.py`` alone, waiting for a robot description that never comes.

Launched by ``colcon test`` (add_launch_test, ROS_DOMAIN_ID isolated) or by hand:
``launch_test test/ros/test_sigint_launch.py``. Needs ``ros2`` (ros2launch) on the PATH.
"""
from __future__ import annotations

import atexit
import os
import pty
import shutil
import signal
import subprocess
import threading
import time
import unittest

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("payload_estimator.msg", reason="no interfaces: colcon build, or scripts/build_ros_interfaces.py")
pytest.importorskip("launch_testing")
pytest.importorskip("ros2launch")
pytest.importorskip("tf2_ros")  # the simulator's

import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.util  # noqa: E402

import launch  # noqa: E402

TERMINAL, SCRIPT = "terminal", "script"
"""How ``ros2 launch`` runs: in a terminal (stdin a tty: it leaves the signal to the terminal, which gives
every process of the job one), or from a script (no tty: it also sends each node a SIGINT of its own)."""
CASES = {
    "sim_demo_loading": (["sim_demo.launch.py", "rviz:=false"], "process started", 1.0, TERMINAL, 2),
    "sim_demo": (["sim_demo.launch.py", "rviz:=false"], "estimating with", 2.0, TERMINAL, 2),
    "sim_demo_from_a_script": (["sim_demo.launch.py", "rviz:=false"], "estimating with", 2.0, SCRIPT, 1),
    "sim_demo_identify": (["sim_demo.launch.py", "rviz:=false", "scenario:=identify"], "FollowJointTrajectory goals",
                          2.0, TERMINAL, 1),
    "estimator": (["estimator.launch.py"], "waiting for the robot model", 1.0, TERMINAL, 1),
}
"""name: (``ros2 launch payload_estimator`` arguments, the output line after which the signal is sent, seconds
after it, how ros2 launch runs, runs). ``sim_demo_loading`` signals while the nodes still import their modules
(seconds on a loaded PC), ``sim_demo`` while the estimator estimates (PMD solving at 10 Hz, so the signal often
lands during a solve)."""
READY_WITHIN_S = 120.0
"""Wall seconds a case may take to print its line (the simulator simulates first)."""
EXIT_WITHIN_S = 30.0
"""Wall seconds ``ros2 launch`` may take to end after the signal before the test calls it hung (launch's own
escalation, SIGTERM after 5 s and SIGKILL after 10 s, would have shown in its output long before)."""
BAD = ("died", "escalating to", "Task was destroyed", "Traceback", "again, ignoring")
"""What ``ros2 launch``'s output must not say after one SIGINT (case-insensitive)."""


@pytest.mark.launch_test
@launch_testing.parametrize("case", list(CASES))
def generate_test_description(case):
    # nothing of ours launched here (a process that keeps the launch alive while the test runs): the test
    # starts ros2 launch itself, in a process group of its own
    return launch.LaunchDescription([launch_testing.util.KeepAliveProc(), launch_testing.actions.ReadyToTest()])


def _run_once(arguments: list[str], ready: str, after_s: float, mode: str) -> tuple[int | None, str, float]:
    """Start ``ros2 launch payload_estimator ...``, send its process group one SIGINT ``after_s`` after ``ready``.

    Returns ``(exit status or None if it did not end, its output, seconds from the signal to its end)``.
    """
    command = ["ros2", "launch", "payload_estimator", *arguments]
    env = dict(os.environ, PYTHONUNBUFFERED="1", RCUTILS_LOGGING_BUFFERED_STREAM="0")
    terminal = pty.openpty() if mode == TERMINAL else None
    process = subprocess.Popen(command, stdin=terminal[1] if terminal else subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env,
                               start_new_session=True)  # its own process group, as a terminal's job
    atexit.register(_end_group, process)  # this test's process ending early must not leave the launch running
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if ready in line:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not seen.wait(READY_WITHIN_S):
            raise AssertionError(f"{' '.join(command)}: no {ready!r} within {READY_WITHIN_S:g} s:\n{''.join(lines)}")
        time.sleep(after_s)
        signalled = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: ros2 launch and every node get it, once
        try:
            status: int | None = process.wait(timeout=EXIT_WITHIN_S)
        except subprocess.TimeoutExpired:
            status = None
        took = time.monotonic() - signalled
    finally:
        _end_group(process)
        atexit.unregister(_end_group)
        reader.join(timeout=5.0)
        for fd in terminal or ():
            os.close(fd)
    return status, "".join(lines), took


def _end_group(process: subprocess.Popen) -> None:
    """SIGKILL to whatever of ``process``'s group still runs (a hung launch, a node it left behind, or this test
    ending early)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # nothing left: the usual end
        pass
    process.wait()


class TestOneSigint(unittest.TestCase):
    def test_one_sigint_ends_the_launch_cleanly(self, case):
        if shutil.which("ros2") is None:
            self.skipTest("no ros2 command (ros2cli, ros2launch) on the PATH")
        arguments, ready, after_s, mode, runs = CASES[case]
        for run in range(1, runs + 1):
            status, output, took = _run_once(arguments, ready, after_s, mode)
            after = output.split("SIGINT", 1)[-1] if "SIGINT" in output else output
            where = f"{case}, run {run}: ros2 launch payload_estimator {' '.join(arguments)}"
            print(f"{where} ({mode}): exit status {status}, {took:.1f} s after the signal")
            self.assertIsNotNone(status, f"{where}: still running {EXIT_WITHIN_S:g} s after one SIGINT:\n{output}")
            self.assertEqual(status, 0, f"{where}: exit status {status}:\n{output}")
            for bad in BAD:
                self.assertNotIn(bad.lower(), after.lower(), f"{where}: {bad!r} after the signal:\n{output}")
            started = output.count("process started with pid")
            self.assertGreater(started, 0, output)
            self.assertEqual(output.count("process has finished cleanly"), started,
                             f"{where}: not every process finished cleanly:\n{output}")
