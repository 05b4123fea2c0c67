"""calibration.audits: see its modules."""
