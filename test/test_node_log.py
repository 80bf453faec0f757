"""What the estimator node logs besides the supervisor, without ROS: :mod:`payload_estimator.supervision.node_log`."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from payload_estimator.pipeline.health import LOGGER_NAME
from payload_estimator.supervision.node_log import InternalErrors, LogForwarding


class Recorder:
    """Stands in for the node's rclpy logger."""

    def __init__(self, fail: bool = False) -> None:
        self.lines: list[tuple[str, str]] = []
        self.fail = fail

    def _log(self, level: str, text: str) -> None:
        if self.fail:
            raise RuntimeError("the logger is gone")
        self.lines.append((level, text))

    def debug(self, text: str) -> None:
        self._log("debug", text)

    def info(self, text: str) -> None:
        self._log("info", text)

    def warning(self, text: str) -> None:
        self._log("warning", text)

    def error(self, text: str) -> None:
        self._log("error", text)


def test_the_packages_log_goes_to_the_node_by_level_and_only_there():
    source = logging.getLogger(LOGGER_NAME)
    was = (source.level, source.propagate)
    node = Recorder()
    forwarding = LogForwarding(node)
    forwarding.install()
    try:
        assert not source.propagate
        source.debug("not forwarded")
        source.info("built")
        source.warning("dropped a sample")
        source.error("cannot build")
    finally:
        forwarding.remove()
    source.warning("after removal")
    assert node.lines == [("info", "built"), ("warning", "dropped a sample"), ("error", "cannot build")]
    assert (source.level, source.propagate) == was


def test_a_logger_that_raises_never_raises_into_the_pipeline():
    forwarding = LogForwarding(Recorder(fail=True))
    forwarding.install()
    try:
        logging.getLogger(LOGGER_NAME).warning("still fine")
    finally:
        forwarding.remove()


def test_each_kind_of_internal_error_is_logged_once_with_its_traceback():
    node, running = Recorder(), [True]
    errors = InternalErrors(node, lambda: running[0])
    for _ in range(3):
        try:
            raise KeyError("x")
        except KeyError as exc:
            errors.report("processing input", exc)
    try:
        raise ValueError("y")
    except ValueError as exc:
        errors.report("processing input", exc)
    assert [level for level, _ in node.lines] == ["error", "error"]
    assert node.lines[0][1].startswith("internal error while processing input (the node keeps running): KeyError")
    assert "Traceback" in node.lines[0][1]
    running[0] = False  # shutting down: publishers and services go away
    try:
        raise TypeError("z")
    except TypeError as exc:
        errors.report("publishing diagnostics", exc)
    assert len(node.lines) == 2


def test_a_guarded_service_answers_an_internal_error():
    node = Recorder()
    errors = InternalErrors(node, lambda: True)

    def _on_reset(request, response):
        raise RuntimeError("a bug")

    answer = errors.guard(_on_reset)(None, SimpleNamespace(success=True, message=""))
    assert not answer.success and answer.message == "internal error: RuntimeError: a bug"
    assert node.lines and "while serving _on_reset" in node.lines[0][1]
    ok = errors.guard(lambda request, response: response)(None, SimpleNamespace(success=True))
    assert ok.success
