"""Estimates turned into things people use: URDF fragments, tables, plots, rviz markers."""
