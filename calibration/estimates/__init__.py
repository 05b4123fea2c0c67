"""Corrected estimates from the results database (``judgecards estimate``): one card@version
and judge model, judge-only, human-only and corrected numbers.

Reads labels (`calibration.labels`) and corrects with `calibration.stats`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `calibration`'s face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): the result types that
# `calibration`'s functions return, imported from here when a caller names one.
_EXPORTS: dict[str, str] = {
    "EstimateRow": "calibration.estimates.report",
    "EstimatesReport": "calibration.estimates.report",
}
# `_SHARED`: what `calibration`'s face (documented there) and the other calibration
# packages and judgecards' cli, serve and report take from here.
_SHARED: dict[str, str] = {
    "audit_estimates": "calibration.estimates.corrected",
    "estimate": "calibration.estimates.corrected",
    "estimate_lines": "calibration.estimates.report",
    "interval_notes": "calibration.estimates.report",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration.estimates", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from calibration.estimates.corrected import audit_estimates as audit_estimates
    from calibration.estimates.corrected import estimate as estimate
    from calibration.estimates.report import EstimateRow as EstimateRow
    from calibration.estimates.report import EstimatesReport as EstimatesReport
    from calibration.estimates.report import estimate_lines as estimate_lines
    from calibration.estimates.report import interval_notes as interval_notes
