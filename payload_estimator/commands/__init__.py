"""The subcommands of ``payload-estimator``; each module has ``add_parser`` and ``run``.

A command module imports only the core at import time (``payload-estimator --help``
and ``estimate`` work with ``pip install .`` alone); what needs an extra (pinocchio,
MuJoCo, matplotlib, rosbags) is imported inside ``run``, and a missing one is named
in one line with the extra that brings it (:func:`missing_extra`).
"""

from __future__ import annotations

from payload_estimator.errors import CommandError

__all__ = ["CommandError", "EXTRA_OF_MODULE", "missing_extra"]


EXTRA_OF_MODULE: dict[str, str] = {
    "pinocchio": "sim",
    "mujoco": "sim",
    "matplotlib": "sim",
    "rosbags": "sim",
    "cvxpy": "bench",
    "clarabel": "bench",
}
"""Top-level modules of the optional dependencies, by the extra of ``pyproject.toml`` that installs them."""


def missing_extra(exc: ImportError) -> str | None:
    """One line naming the extra to install when ``exc`` is a missing optional dependency, else None."""
    name = (getattr(exc, "name", None) or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(name)
    if extra is None:
        return None
    return f"this needs {name}, which the {extra!r} extra installs: pip install \"payload_estimator[{extra}]\""
