"""Juries: several judges on the same items, aggregated (majority, fitted weights,
Dawid–Skene) and run through one bounded pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `calibration`'s face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): the result types that
# `calibration`'s functions return, imported from here when a caller names one.
_EXPORTS: dict[str, str] = {
    "DawidSkeneResult": "calibration.juries.dawid_skene_model",
    "FittedJury": "calibration.juries.jury",
    "JudgeReliability": "calibration.juries.jury",
    "JurorReliability": "calibration.juries.run",
    "JuryEvaluation": "calibration.juries.jury",
    "JuryRun": "calibration.juries.run",
    "JuryVerdict": "calibration.juries.run",
    "MajorityVote": "calibration.juries.jury",
}
# `_SHARED`: what `calibration`'s face (documented there) and the other calibration
# packages and judgecards' cli, serve and report take from here.
_SHARED: dict[str, str] = {
    "Jury": "calibration.juries.run",
    "dawid_skene": "calibration.juries.dawid_skene_model",
    "evaluate_jury": "calibration.juries.jury",
    "fit_jury": "calibration.juries.jury",
    "majority_vote": "calibration.juries.jury",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration.juries", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from calibration.juries.dawid_skene_model import DawidSkeneResult as DawidSkeneResult
    from calibration.juries.dawid_skene_model import dawid_skene as dawid_skene
    from calibration.juries.jury import FittedJury as FittedJury
    from calibration.juries.jury import JudgeReliability as JudgeReliability
    from calibration.juries.jury import JuryEvaluation as JuryEvaluation
    from calibration.juries.jury import MajorityVote as MajorityVote
    from calibration.juries.jury import evaluate_jury as evaluate_jury
    from calibration.juries.jury import fit_jury as fit_jury
    from calibration.juries.jury import majority_vote as majority_vote
    from calibration.juries.run import JurorReliability as JurorReliability
    from calibration.juries.run import Jury as Jury
    from calibration.juries.run import JuryRun as JuryRun
    from calibration.juries.run import JuryVerdict as JuryVerdict
