"""Cascades of judges, cheap to strong, each trusted only where its agreement with people is
guaranteed; single items and pairs, and the runs a database remembers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `calibration`'s face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): the result types that
# `calibration`'s functions return, imported from here when a caller names one.
_EXPORTS: dict[str, str] = {
    "CascadeDecision": "calibration.cascades.cascade",
    "CascadeJudge": "calibration.cascades.history",
    "CascadeRun": "calibration.cascades.cascade",
    "CascadeStage": "calibration.cascades.stages",
    "EarlierQueue": "calibration.cascades.stages",
    "PairDecision": "calibration.cascades.pairwise",
    "PairwiseCascadeRun": "calibration.cascades.pairwise",
    "StoredCascadeRun": "calibration.cascades.history",
}
# `_SHARED`: what `calibration`'s face (documented there) and the other calibration
# packages and judgecards' cli, serve and report take from here.
_SHARED: dict[str, str] = {
    "Cascade": "calibration.cascades.cascade",
    "PairwiseCascade": "calibration.cascades.pairwise",
    "comparison_confidence": "calibration.cascades.pairwise",
    "stored_cascade_runs": "calibration.cascades.history",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration.cascades", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from calibration.cascades.cascade import Cascade as Cascade
    from calibration.cascades.cascade import CascadeDecision as CascadeDecision
    from calibration.cascades.cascade import CascadeRun as CascadeRun
    from calibration.cascades.history import CascadeJudge as CascadeJudge
    from calibration.cascades.history import StoredCascadeRun as StoredCascadeRun
    from calibration.cascades.history import stored_cascade_runs as stored_cascade_runs
    from calibration.cascades.pairwise import PairDecision as PairDecision
    from calibration.cascades.pairwise import PairwiseCascade as PairwiseCascade
    from calibration.cascades.pairwise import PairwiseCascadeRun as PairwiseCascadeRun
    from calibration.cascades.pairwise import comparison_confidence as comparison_confidence
    from calibration.cascades.stages import CascadeStage as CascadeStage
    from calibration.cascades.stages import EarlierQueue as EarlierQueue
