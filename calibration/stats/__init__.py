"""calibration.stats: see its modules."""
