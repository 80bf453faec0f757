#!/usr/bin/env python3
"""Build the package's ROS interfaces with ROS 2's wheels, without a ROS installation.

``colcon build`` generates ``msg/``, ``srv/`` and ``action/`` with rosidl (CMakeLists.txt).
Where there is no ROS 2, only the wheels of the ``ros`` extra (``pip install -e ".[ros,test]"``),
this script does the same with the rosidl generators those wheels install into the running
Python's prefix (the venv): it writes a CMake project holding only ``rosidl_generate_interfaces``
(and ``config/``, which the ROS tests find through the ament index) into ``OUT/src``, configures,
builds and installs it into ``OUT/install``. A second run with unchanged inputs does nothing.

It prints the environment the interfaces need, as shell ``export`` lines on stdout (progress
goes to stderr), so that ``eval "$(python scripts/build_ros_interfaces.py)"`` sets it::

    PYTHONPATH          OUT/install/lib/pythonX.Y/site-packages: the generated ``payload_estimator``
                        folder (``msg``, ``srv``, ``action`` and the type support modules), which
                        ``payload_estimator/__init__.py`` adds to the package's path (pkgutil.extend_path)
    LD_LIBRARY_PATH     OUT/install/lib: the type support libraries rmw loads by name
    AMENT_PREFIX_PATH   OUT/install (share/payload_estimator/config, found by get_package_share_directory)
                        and the venv

``--json`` prints the folders as a JSON object, a list for each variable (what
``test/ros/conftest.py`` reads).

The one snag of the wheels: their exported CMake targets (``<pkg>::<pkg>__rosidl_generator_py``)
name the Python and numpy include folders of the machine they were built on
(``/opt/python/cp3XY-cp3XY/...``), and CMake refuses to generate when an imported target's
include folder does not exist. The generated CMakeLists.txt drops, from every imported target
it found, the include folders that do not exist on this machine. Nothing is lost: the generated
Python extension gets this Python's and this numpy's include folders from rosidl_generator_py's
own ``find_package(Python3 ... NumPy)``. The venv's files are not touched and no root is needed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout (msg/, srv/, action/, config/, package.xml)."""

INTERFACES = ["msg/PayloadEstimate.msg", "srv/SaveUrdf.srv", "srv/ApplyEstimate.srv", "srv/Calibrate.srv",
              "action/Identify.action"]
"""What CMakeLists.txt's rosidl_generate_interfaces generates (keep the two in step)."""
DEPENDENCIES = ["std_msgs", "geometry_msgs", "builtin_interfaces", "action_msgs"]

CMAKELISTS = """\
# Written by scripts/build_ros_interfaces.py: the interfaces of ../../../CMakeLists.txt, built
# against ROS 2's wheels.
cmake_minimum_required(VERSION 3.21)  # IMPORTED_TARGETS directory property
project(payload_estimator)

find_package(ament_cmake REQUIRED)
find_package(rosidl_default_generators REQUIRED)
foreach(dependency {dependencies})
  find_package(${{dependency}} REQUIRED)
endforeach()

rosidl_generate_interfaces(${{PROJECT_NAME}}
  {interfaces}
  DEPENDENCIES {dependencies}
)

install(DIRECTORY config DESTINATION share/${{PROJECT_NAME}})

# The wheels' targets name include folders of the machine that built them (a manylinux
# Python under /opt/python); CMake refuses imported targets whose include folders do not
# exist. Keep only the folders that exist here (and generator expressions).
get_property(imported_targets DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(target IN LISTS imported_targets)
  get_target_property(folders ${{target}} INTERFACE_INCLUDE_DIRECTORIES)
  if(folders)
    set(kept "")
    foreach(folder IN LISTS folders)
      if(folder MATCHES "\\\\$<" OR EXISTS "${{folder}}")
        list(APPEND kept "${{folder}}")
      endif()
    endforeach()
    set_target_properties(${{target}} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${{kept}}")
  endif()
endforeach()

ament_package()
"""


def cmakelists() -> str:
    """The CMakeLists.txt of the interfaces-only project."""
    return CMAKELISTS.format(dependencies=" ".join(DEPENDENCIES), interfaces="\n  ".join(f'"{i}"' for i in INTERFACES))


def sources() -> dict[str, bytes]:
    """The files the project is made of: relative path -> content."""
    files = {path: (ROOT / path).read_bytes() for path in [*INTERFACES, "package.xml"]}
    for path in sorted((ROOT / "config").rglob("*")):
        if path.is_file():
            files[str(path.relative_to(ROOT))] = path.read_bytes()
    files["CMakeLists.txt"] = cmakelists().encode()
    return files


def toolchain() -> str:
    """What the build is made with: this Python, its prefix and the ROS wheels installed there."""
    wheels = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()
                    if (d.metadata["Name"] or "").lower().startswith("ros-"))
    return "\n".join([sys.executable, sys.prefix, sys.version, *wheels]) + "\n"


def fingerprint(files: dict[str, bytes]) -> str:
    """What decides whether a build is current: the sources, this script and the toolchain."""
    digest = hashlib.sha256()
    for path, content in sorted(files.items()):
        digest.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
    digest.update(Path(__file__).read_bytes())
    digest.update(toolchain().encode())
    return digest.hexdigest()


def environment(out: Path) -> dict[str, list[str]]:
    """The folders the built interfaces need, for each variable: to put before its current value."""
    install = out / "install"
    generated = sorted((install / "lib").glob("python*/*-packages/payload_estimator/msg"))
    if not generated:
        sys.exit(f"ROS interfaces: no payload_estimator/msg under {install / 'lib'}")
    return {"PYTHONPATH": [str(generated[0].parent.parent)], "LD_LIBRARY_PATH": [str(install / "lib")],
            "AMENT_PREFIX_PATH": [str(install), sys.prefix]}


def build(out: Path, jobs: int) -> None:
    """Generate, build and install the interfaces into ``out`` unless that build is current."""
    files = sources()
    stamp = out / "install" / "fingerprint"
    current = fingerprint(files)
    if stamp.is_file() and stamp.read_text().strip() == current:
        print(f"ROS interfaces: up to date in {out}", file=sys.stderr)
        return
    prefix = Path(sys.prefix)
    if not (prefix / "share" / "rosidl_default_generators").is_dir():
        sys.exit(f"{prefix} has no rosidl_default_generators: pip install -e \".[ros]\" in this venv first")
    cmake = shutil.which("cmake")
    if cmake is None:
        sys.exit("cmake is not on PATH (Debian: apt-get install cmake g++; or pip install cmake)")
    src, build_dir = out / "src", out / "build"
    made_with = out / "toolchain"
    if made_with.is_file() and made_with.read_text() != toolchain():
        # CMake's cache keeps what it found in the previous prefix: start afresh
        print(f"ROS interfaces: another Python or other ROS wheels than {made_with}'s: rebuilding", file=sys.stderr)
        shutil.rmtree(build_dir, ignore_errors=True)
        shutil.rmtree(out / "install", ignore_errors=True)
    for path, content in files.items():
        target = src / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != content:
            target.write_bytes(content)
    env = dict(os.environ)
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(p for p in [str(prefix), env.get("AMENT_PREFIX_PATH", "")] if p)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    lib = str(out / "install" / "lib")
    commands = [
        [cmake, "-S", str(src), "-B", str(build_dir), f"-DCMAKE_PREFIX_PATH={prefix}",
         f"-DPython3_EXECUTABLE={sys.executable}", f"-DCMAKE_INSTALL_PREFIX={out / 'install'}",
         # the Python extensions find the libraries of lib/ from lib/pythonX.Y/site-packages/payload_estimator
         f"-DCMAKE_INSTALL_RPATH=$ORIGIN;$ORIGIN/../../..;{lib};{prefix / 'lib'}", "-DBUILD_TESTING=OFF"],
        [cmake, "--build", str(build_dir), "--parallel", str(jobs)],
        [cmake, "--install", str(build_dir)],
    ]
    log = out / "build.log"
    out.mkdir(parents=True, exist_ok=True)
    with log.open("w") as log_file:
        for command in commands:
            print("+ " + " ".join(command), file=sys.stderr)
            if subprocess.run(command, env=env, stdout=log_file, stderr=subprocess.STDOUT).returncode:
                sys.stderr.write(log.read_text()[-6000:])
                sys.exit(f"ROS interfaces: failed ({' '.join(command[:2])}); the whole log is {log}")
    made_with.write_text(toolchain())
    stamp.write_text(current + "\n")
    print(f"ROS interfaces: built into {out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Build (when needed) and print the environment."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "ros_interfaces",
                        help="the build's folder (default: build/ros_interfaces in the checkout)")
    parser.add_argument("--jobs", type=int, default=1, help="compile jobs (default: 1)")
    parser.add_argument("--json", action="store_true", help="print the environment as a JSON object")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    build(out, args.jobs)
    env = environment(out)
    if args.json:
        print(json.dumps(env))
    else:
        for name, folders in env.items():
            print(f'export {name}="{os.pathsep.join(folders)}${{{name}:+:${name}}}"')


if __name__ == "__main__":
    main()
