"""Simulation: payload catalogue, sensor-level ground truth, work cycles and the MuJoCo robot simulator.

Submodules import their heavy dependencies (pinocchio, MuJoCo) themselves, so
importing this package costs nothing.
"""
