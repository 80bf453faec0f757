"""Our ROS interface definitions (``msg/*.msg``, ``srv/*.srv``) for code that runs without ROS.

The ``.msg``/``.srv`` files live once, in the repository's ``msg/`` and ``srv/``
(what ``rosidl`` builds); nothing here copies them. :func:`interface_definitions`
finds them next to the Python package (a source checkout or an editable
install) or, when ROS is present, in the package's ``ament_index`` share
directory, and :func:`ros_typestore` registers them in a ``rosbags`` type
store on top of the standard ROS 2 Jazzy types.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from payload_estimator.errors import InterfacesNotFound

__all__ = [
    "PACKAGE",
    "InterfacesNotFound",
    "interface_root",
    "interface_definitions",
    "split_service",
    "ros_typestore",
]

PACKAGE = "payload_estimator"
"""The ROS package name (and the prefix of our interface type names)."""


def _candidate_roots() -> Iterator[Path]:
    # (a) the repository root next to the package: payload_estimator/io/interfaces.py -> ../../
    yield Path(__file__).resolve().parent.parent.parent
    # (b) the installed ROS package's share directory, if ROS is present
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        return
    try:
        yield Path(get_package_share_directory(PACKAGE))
    except (PackageNotFoundError, LookupError, ValueError):
        return


def interface_root() -> Path:
    """The directory holding ``msg/`` (and ``srv/``): the repository root or the ROS share directory.

    Raises:
        InterfacesNotFound: when neither has ``msg/PayloadEstimate.msg``.
    """
    searched = []
    for root in _candidate_roots():
        searched.append(str(root))
        if (root / "msg" / "PayloadEstimate.msg").is_file():
            return root
    raise InterfacesNotFound(
        f"{PACKAGE} message definitions not found (looked in {', '.join(searched)}); "
        "use a source checkout or source the ROS workspace that built the package"
    )


def interface_definitions() -> dict[str, str]:
    """The text of our interfaces by full type name.

    ``payload_estimator/msg/PayloadEstimate`` -> the ``.msg`` text, and
    ``payload_estimator/srv/SaveUrdf`` -> the whole ``.srv`` text (see :func:`split_service`).
    """
    root = interface_root()
    out: dict[str, str] = {}
    for kind, suffix in (("msg", ".msg"), ("srv", ".srv")):
        for path in sorted((root / kind).glob(f"*{suffix}")):
            out[f"{PACKAGE}/{kind}/{path.stem}"] = path.read_text()
    return out


def split_service(text: str) -> tuple[str, str]:
    """A ``.srv`` text -> (request, response), each plain ``.msg`` text."""
    lines = text.splitlines()
    marks = [i for i, line in enumerate(lines) if line.strip() == "---"]
    if len(marks) != 1:
        raise ValueError("a .srv file needs exactly one '---' line")
    k = marks[0]
    return "\n".join(lines[:k]) + "\n", "\n".join(lines[k + 1 :]) + "\n"


def ros_typestore(ours: bool = True):
    """A ``rosbags`` type store with the ROS 2 Jazzy types and (``ours``) our messages registered.

    Services are not registered: ``rosbags`` types live in ``msg`` namespaces only,
    and no bag or topic carries a service here.

    Raises:
        InterfacesNotFound: ``ours`` is set but the definitions cannot be found.
    """
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    if ours:
        types = {}
        for name, text in interface_definitions().items():
            if "/msg/" in name:
                types.update(get_types_from_msg(text, name))
        store.register(types)
    return store
