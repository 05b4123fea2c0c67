"""judgecards.storage: see its modules."""
