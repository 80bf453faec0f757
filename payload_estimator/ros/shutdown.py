"""How the nodes' processes end: one SIGINT or SIGTERM, at any moment of their life, ends them cleanly (status 0).

A node's process goes through three stages, and a signal may land in any of them (``ros2 launch``
passes Ctrl-C on to every process of the terminal's job at once, and, run from a script, sends its
own SIGINT too; a loaded robot PC takes seconds to import numpy, scipy, pinocchio and MuJoCo):

1. *Loading* (the executable's imports, before ``main``): :func:`exit_on_signals` makes SIGINT and
   SIGTERM end the process at once with status 0: nothing runs yet, nothing needs cleaning up.
2. *Running* (``main``, inside :class:`NodeProcess`): Python's own handlers are back (both signals
   raise ``KeyboardInterrupt`` in the main thread) for ``rclpy.init`` to chain its handlers to, which
   shut the context down and wake the executors: wherever the signal lands (``rclpy.init``, building
   the node, spinning), the ``with`` block ends.
3. *Ending* (:func:`shut_down`): further signals are ignored, so that the cleanups registered so far
   run to their end, each bounded in time; then rclpy's shutdown (which flushes its log) and an exit
   at once with the status. An exit at once: nothing is left to clean up; the interpreter's
   finalisation would join the executors' worker threads (a callback still waiting for a service or
   a motion holds it up), could meet the processing loop's daemon thread in the middle of a turn, and
   its last garbage collection of every module's objects (numpy, scipy, pinocchio, trimesh ...)
   takes most of a second on a loaded robot PC. A Python exception (a bad parameter, a bug) is
   printed and ends the process with status 1.

Without this, a signal during the imports or while the node was being built printed a traceback and
the process "died" with exit code -2 (or -11, the interpreter finalising under a running daemon
thread), and ``ros2 launch`` reported it.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any, NoReturn

__all__ = ["exit_on_signals", "NodeProcess", "shut_down", "spin_until_shutdown", "ENDING_SIGNALS"]

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that end a node: Ctrl-C (and ``ros2 launch``'s first), and SIGTERM (its second)."""


def exit_on_signals() -> None:
    """Stage 1, the first thing an executable does: SIGINT or SIGTERM end the process at once, status 0."""
    for signum in ENDING_SIGNALS:
        signal.signal(signum, _exit_at_once)


def _exit_at_once(signum: int, frame: Any) -> None:
    os._exit(0)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class NodeProcess:
    """Stage 2: ``with NodeProcess() as process:`` around everything ``main`` does (module docstring).

    :meth:`on_exit` registers what must be undone (an executor to shut down, a thread to join, a
    node to destroy) as soon as it exists; the ``with`` block's end, however reached (a signal, the
    context shut down, an exception), calls :func:`shut_down` with them, the last registered first,
    and never returns.
    """

    def __init__(self) -> None:
        self._cleanups: list[Callable[[], object]] = []

    def __enter__(self) -> NodeProcess:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        return self

    def on_exit(self, cleanup: Callable[[], object]) -> None:
        """Call ``cleanup`` when the process ends (before what was registered earlier)."""
        self._cleanups.append(cleanup)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> NoReturn:
        _ignore_signals()
        status = 0
        if isinstance(exc, SystemExit):
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        elif exc is not None and not _is_shutdown(exc):
            traceback.print_exception(kind, exc, tb)
            status = 1
        shut_down(*reversed(self._cleanups), status=status)


def _is_shutdown(exc: BaseException) -> bool:
    """Whether ``exc`` is how a signal ends the node, not an error.

    Ctrl-C, rclpy's spinning ended by the context's shutdown, or anything raised once rclpy's signal
    handler shut the context down (a node being built then fails to create its publishers: "context is
    invalid").
    """
    if isinstance(exc, KeyboardInterrupt):
        return True
    from rclpy.executors import ExternalShutdownException
    from rclpy.utilities import get_default_context

    if isinstance(exc, ExternalShutdownException):
        return True
    context = get_default_context()
    return context.handle is not None and not context.ok()  # initialised, then shut down


def spin_until_shutdown(executor: Any, context: Any) -> None:
    """Spin ``executor`` until Ctrl-C or the context's shutdown, which end it cleanly.

    A shutdown (SIGTERM) between the executor's check and its wait makes rcl
    report an invalid context instead of ExternalShutdownException: a clean
    shutdown all the same; anything else while the context is valid is raised.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException

    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok(context=context):
            raise


def _ignore_signals() -> None:
    for signum in ENDING_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def shut_down(*cleanups: Callable[[], object], status: int = 0) -> NoReturn:
    """Stage 3: ``cleanups`` in order, rclpy's shutdown, then an exit at once with ``status``.

    Signals are ignored from here on: each cleanup must be bounded in time (joins and executor
    shutdowns with a timeout). A cleanup that fails (a handle the shutdown already destroyed) does
    not stop the others.
    """
    _ignore_signals()
    for cleanup in cleanups:
        try:
            cleanup()
        except Exception:  # noqa: BLE001,S110 - shutting down: nothing left to report it to
            pass
    try:
        import rclpy

        rclpy.try_shutdown()  # also flushes rclpy's log
    except Exception:  # noqa: BLE001,S110
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001,S110
            pass
    os._exit(status)
