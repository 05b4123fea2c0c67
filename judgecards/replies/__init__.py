"""judgecards.replies: see its modules."""
