"""calibration.cascades: see its modules."""
