"""payload_estimator: what is the robot holding? Mass, centre of mass and inertia, online.

The ROS interfaces (``payload_estimator.msg``, ``.srv``, ``.action``) are generated
by rosidl into a ``payload_estimator`` folder of their own. ``colcon build``
installs them beside this package, in one folder; without a ROS installation,
``scripts/build_ros_interfaces.py`` builds them elsewhere, and the
:func:`pkgutil.extend_path` below adds every ``payload_estimator`` folder on
``sys.path`` (``PYTHONPATH``) to this package's path, so that they import all
the same. Without them on the path it adds nothing.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

__version__ = "0.1.0"
