"""judgecards.limits: see its modules."""
