"""Files and messages in and out: sample tables (CSV/NPZ), rosbag2 recordings (read) and ROS 2 messages (ROS-free)."""
