"""How the nodes' processes end: one function both ``main`` functions call last."""

from __future__ import annotations

import gc
from collections.abc import Callable

import rclpy

__all__ = ["shut_down"]


def shut_down(*cleanups: Callable[[], object]) -> None:
    """End a node's process: ``cleanups`` in order, rclpy's shutdown, then an exit at once.

    A second Ctrl-C while cleaning up skips the cleanups left. Exit at once: nothing is left to clean
    up, and the interpreter's last garbage collection of every module's objects (numpy, scipy,
    pinocchio, trimesh ...) takes most of a second on a loaded robot PC; :func:`gc.freeze` puts them
    out of its sight (SIGINT and SIGTERM end the node within 0.1 s).
    """
    try:
        for cleanup in cleanups:
            cleanup()
    except KeyboardInterrupt:
        pass
    rclpy.try_shutdown()
    gc.freeze()
