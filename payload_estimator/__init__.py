"""payload_estimator: what is the robot holding? Mass, centre of mass and inertia, online."""

__version__ = "0.1.0"
