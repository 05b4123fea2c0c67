"""judgecards.judging: see its modules."""
