"""calibration.juries: see its modules."""
