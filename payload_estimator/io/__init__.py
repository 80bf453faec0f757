"""Files in and out: sample tables (CSV/NPZ) and rosbag2 recordings."""
