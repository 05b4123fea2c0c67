"""Aligning a card to its people: candidate cards (worked examples, past disagreements,
guidelines) tried on held-out human labels, single-item and pairwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `calibration`'s face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): the result types that
# `calibration`'s functions return, imported from here when a caller names one.
_EXPORTS: dict[str, str] = {
    "AlignmentResult": "calibration.alignment.run",
    "CandidateScore": "calibration.alignment.run",
}
# `_SHARED`: what `calibration`'s face (documented there) and the other calibration
# packages and judgecards' cli, serve and report take from here.
_SHARED: dict[str, str] = {
    "align": "calibration.alignment.aligner",
    "alignment_runs": "calibration.alignment.aligner",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration.alignment", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from calibration.alignment.aligner import align as align
    from calibration.alignment.aligner import alignment_runs as alignment_runs
    from calibration.alignment.run import AlignmentResult as AlignmentResult
    from calibration.alignment.run import CandidateScore as CandidateScore
