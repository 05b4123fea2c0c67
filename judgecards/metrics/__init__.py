"""Deterministic metrics (filled in by the metrics issue)."""
from judgecards.metrics.stats import Estimate, bootstrap_ci

__all__ = ["Estimate", "bootstrap_ci"]
