"""Every exception the package raises on purpose, in one place.

Each is a :class:`PayloadEstimatorError`, so a caller can catch the package's own
complaints apart from programming errors, and (but :class:`CommandError`) also a
:class:`ValueError` or :class:`FileNotFoundError`, so code that catches those keeps
working. A message is one line that says what is wrong and, where it can, what to do.

* :class:`ConfigurationError`: a setting, option or shape that cannot be used.
* :class:`InputError`: data that cannot be used (a file, a bag, a calibration);
  :class:`SamplesFileError` and :class:`BagError` name the kind of file.
* :class:`InsufficientData`: an estimator has seen too little to answer.
* :class:`ExcitationError`: a motion cannot be designed, or is unsafe.
* :class:`GoalError`: a trajectory goal refused or aborted (with its
  ``FollowJointTrajectory`` error code).
* :class:`InterfacesNotFound`: the package's ROS interface definitions are nowhere.
* :class:`CommandError`: the command line's input; printed as one line, exit status 2.
"""

from __future__ import annotations

__all__ = [
    "PayloadEstimatorError",
    "ConfigurationError",
    "ShapeError",
    "InputError",
    "SamplesFileError",
    "BagError",
    "CalibrationError",
    "InsufficientData",
    "ExcitationError",
    "GoalError",
    "InterfacesNotFound",
    "CommandError",
]


class PayloadEstimatorError(Exception):
    """Base of every exception the package raises on purpose."""


class ConfigurationError(PayloadEstimatorError, ValueError):
    """A setting, option or combination of them that cannot be used; the message names it."""


class ShapeError(ConfigurationError):
    """A payload shape that cannot be used: no volume, unreadable mesh, bad specification."""


class InputError(PayloadEstimatorError, ValueError):
    """Data that cannot be used; the message (one line) says what and why."""


class SamplesFileError(InputError):
    """A sample table that cannot be turned into samples; the message names the problem."""


class BagError(InputError):
    """The path is not a readable rosbag2, or lacks what was asked of it; the message (one line) says which."""


class CalibrationError(InputError):
    """An arm calibration that cannot be made or used (too little motion, another arm, a bad file)."""


class InsufficientData(PayloadEstimatorError, ValueError):
    """Raised by an estimator's ``estimate()`` before it has seen enough usable samples."""


class ExcitationError(PayloadEstimatorError, ValueError):
    """A motion cannot be designed or is unsafe; the message is one line saying why."""


class GoalError(PayloadEstimatorError, ValueError):
    """A trajectory goal refused or aborted: ``code`` (a FollowJointTrajectory error code) and a one-line reason."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class InterfacesNotFound(PayloadEstimatorError, FileNotFoundError):
    """Neither a source checkout nor an installed ROS package provides ``msg/*.msg``."""


class CommandError(PayloadEstimatorError):
    """A problem with the user's input on the command line: printed as one line, exit status 2."""
