"""The ``ros`` fixture of the ROS tests (see ros_helpers.py), and their setup where ROS 2 comes as wheels.

Under ``colcon test`` the package's interfaces are installed beside it and ament_cmake_ros gives
each test a ROS domain of its own: nothing here changes that (``payload_estimator.msg`` imports).
Where ROS 2 comes as wheels (a venv with the ``ros`` extra, see docs/development.md), this runs
``scripts/build_ros_interfaces.py`` (it does nothing when its build is current), puts the
interfaces it built on the path of this process and of the processes it starts, and gives the
tests a ROS domain of their own (unless ROS_DOMAIN_ID is set) and localhost-only discovery, so
that parallel runs do not hear each other. Without rclpy nothing happens: the test modules skip.
Tests that need packages without wheels (launch, launch_testing, tf2_ros, control_msgs, the robot
vendors' messages) skip with the reason ``pytest.importorskip`` gives.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build_ros_interfaces.py"


def _interfaces_from_wheels() -> None:
    """Build and use the interfaces when rclpy is there (the wheels) but the interfaces are not (no colcon)."""
    if importlib.util.find_spec("rclpy") is None or importlib.util.find_spec("payload_estimator.msg") is not None:
        return
    built = subprocess.run([sys.executable, str(BUILD_SCRIPT), "--json"], stdout=subprocess.PIPE, text=True)
    if built.returncode:  # its reason is on stderr; the test modules skip (no payload_estimator.msg)
        return
    env = json.loads(built.stdout)
    for name, folders in env.items():
        os.environ[name] = os.pathsep.join([*folders, *filter(None, os.environ.get(name, "").split(os.pathsep))])
    import payload_estimator

    # what payload_estimator/__init__.py's pkgutil.extend_path does in the processes started with this
    # PYTHONPATH: the generated payload_estimator folder (msg, srv, action) joins the package's path
    for folder in env["PYTHONPATH"]:
        generated = os.path.join(folder, "payload_estimator")
        if generated not in payload_estimator.__path__:
            payload_estimator.__path__.append(generated)
    # rmw loads the type support libraries by name (dlopen), and this process's loader read
    # LD_LIBRARY_PATH when it started: load them by path now, so that those loads find them loaded
    # (the processes the tests start get the LD_LIBRARY_PATH set above)
    for folder in env["LD_LIBRARY_PATH"]:
        for library in sorted(Path(folder).glob("libpayload_estimator__*.so")):
            ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


_interfaces_from_wheels()


@pytest.fixture
def ros():
    """A private rclpy context whose nodes spin in background threads."""
    from ros_helpers import RosHarness

    harness = RosHarness()
    yield harness
    harness.close()
