"""Aligning a judge to its people: pick, on held-out human labels, the version of a card that"""

from __future__ import annotations

from calibration.alignment.align import AlignmentResult as AlignmentResult
from calibration.alignment.align import CandidateScore as CandidateScore
from calibration.alignment.align import align as align
from calibration.alignment.align import alignment_runs as alignment_runs
