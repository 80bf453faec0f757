"""What the estimator node logs besides the supervisor's lifecycle (ROS-free).

* :class:`LogForwarding`: the package's Python logger (``payload_estimator``: the stream's
  rate-limited warnings about bad input) goes to the node's logger (rclpy's), printed once there;
* :class:`InternalErrors`: a bug in a callback must not take the node down. Each kind of internal
  error is logged once, with its traceback, and the node keeps running; a service answers it as
  ``success: false`` with the error (:meth:`InternalErrors.guard`).

A logger here is anything with ``debug``, ``info``, ``warning`` and ``error`` methods taking one string
(an rclpy logger, a :class:`logging.Logger`).
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

from payload_estimator.pipeline.health import LOGGER_NAME

__all__ = ["LogForwarding", "InternalErrors"]


class LogForwarding(logging.Handler):
    """Forwards the package's Python logger to ``logger`` from :meth:`install` to :meth:`remove`.

    Args:
        logger: where the records go, by level (``error``, ``warning``, ``info``, ``debug``).
        name: the Python logger forwarded.
    """

    def __init__(self, logger: Any, name: str = LOGGER_NAME) -> None:
        super().__init__(level=logging.INFO)
        self._logger = logger
        self._source = logging.getLogger(name)
        self._was = (self._source.level, self._source.propagate)

    def install(self) -> None:
        """Forward INFO and above, and nothing to the root logger (printed once, by ``logger``)."""
        self._was = (self._source.level, self._source.propagate)
        self._source.addHandler(self)
        self._source.setLevel(logging.INFO)
        self._source.propagate = False

    def remove(self) -> None:
        """Stop forwarding; the Python logger's level and propagation are what they were before."""
        self._source.removeHandler(self)
        self._source.setLevel(self._was[0])
        self._source.propagate = self._was[1]

    def emit(self, record: logging.LogRecord) -> None:
        """Hand ``record``, formatted, to the logger's method of its level; never raises."""
        try:
            text = self.format(record)
            if record.levelno >= logging.ERROR:
                self._logger.error(text)
            elif record.levelno >= logging.WARNING:
                self._logger.warning(text)
            elif record.levelno >= logging.INFO:
                self._logger.info(text)
            else:
                self._logger.debug(text)
        except Exception:  # noqa: BLE001 - logging must never raise into the pipeline
            pass


class InternalErrors:
    """Logs the node's internal errors, each kind once with its traceback.

    Args:
        logger: where they are logged (``error``).
        running: whether the node still runs; while it shuts down, publishers and services go away
            and the errors that causes are not logged.
    """

    def __init__(self, logger: Any, running: Callable[[], bool]) -> None:
        self._logger = logger
        self._running = running
        self._seen: set[str] = set()

    def report(self, what: str, exc: Exception) -> None:
        """Log an exception ``exc`` raised while doing ``what``; the node keeps running.

        Call it from the except block: the traceback logged is the one being handled. Each kind
        (``what`` and the exception's type) is logged once, nothing while the node shuts down.
        """
        if not self._running():
            return
        key = f"{what}: {type(exc).__name__}"
        if key not in self._seen:
            self._seen.add(key)
            self._logger.error(f"internal error while {what} (the node keeps running): "
                               f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")

    def guard(self, callback: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """``callback(request, response)`` wrapped so that an internal error is answered, not raised.

        The wrapped service callback answers ``success: false`` with the error: an exception in a
        callback would stop the executor, and the node with it.
        """

        @functools.wraps(callback)
        def guarded(request: Any, response: Any) -> Any:
            try:
                return callback(request, response)
            except Exception as exc:  # noqa: BLE001
                self.report(f"serving {callback.__name__}", exc)
                response.success = False
                response.message = f"internal error: {type(exc).__name__}: {exc}"
                return response

        return guarded
