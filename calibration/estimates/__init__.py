"""Corrected estimates from the results database: one card@version and judge model, with labels."""

from __future__ import annotations

from calibration.estimates.estimate import Design as Design
from calibration.estimates.estimate import EstimateRow as EstimateRow
from calibration.estimates.estimate import EstimatesReport as EstimatesReport
from calibration.estimates.estimate import audit_estimates as audit_estimates
from calibration.estimates.estimate import estimate as estimate
from calibration.estimates.estimate import estimate_lines as estimate_lines
