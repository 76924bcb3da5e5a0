"""Calibration: the robust per-provider and per-model fit, its export as a config, and `calib fit`."""
