"""Running a judge: `Judge`, its attempts and requests, the prepared-item seam, the live pool,
retries, replay, bias checks and the input items (JSONL, duplicate ids).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `judgecards`' face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): names a user imports from here.
_EXPORTS: dict[str, str] = {
    "LengthCorrelation": "judgecards.judging.bias",
    "PairwiseVerbosity": "judgecards.judging.bias",
    "TransportCounters": "judgecards.judging.retry",
    "model_family": "judgecards.judging.bias",
    "self_preference_warning": "judgecards.judging.bias",
    "verbosity_bias_pairwise": "judgecards.judging.bias",
    "verbosity_bias_single": "judgecards.judging.bias",
}
# `_SHARED`: what `judgecards`' face (documented there), the other subpackages, cli, serve,
# report and calibration take from here.
_SHARED: dict[str, str] = {
    "CheckedItems": "judgecards.judging.jsonl",
    "Judge": "judgecards.judging.judge",
    "LOOKUP_CHUNK": "judgecards.judging.pool",
    "PreparedItem": "judgecards.judging.prepared",
    "Progress": "judgecards.judging.pool",
    "RetryPolicy": "judgecards.judging.retry",
    "check_items": "judgecards.judging.jsonl",
    "item_id_of": "judgecards.judging.prepared",
    "problems_error": "judgecards.judging.jsonl",
    "read_items": "judgecards.judging.jsonl",
    "read_jsonl": "judgecards.judging.jsonl",
    "replay_stand_in": "judgecards.judging.replay",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("judgecards.judging", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from judgecards.judging.bias import LengthCorrelation as LengthCorrelation
    from judgecards.judging.bias import PairwiseVerbosity as PairwiseVerbosity
    from judgecards.judging.bias import model_family as model_family
    from judgecards.judging.bias import self_preference_warning as self_preference_warning
    from judgecards.judging.bias import verbosity_bias_pairwise as verbosity_bias_pairwise
    from judgecards.judging.bias import verbosity_bias_single as verbosity_bias_single
    from judgecards.judging.jsonl import CheckedItems as CheckedItems
    from judgecards.judging.jsonl import check_items as check_items
    from judgecards.judging.jsonl import problems_error as problems_error
    from judgecards.judging.jsonl import read_items as read_items
    from judgecards.judging.jsonl import read_jsonl as read_jsonl
    from judgecards.judging.judge import Judge as Judge
    from judgecards.judging.pool import LOOKUP_CHUNK as LOOKUP_CHUNK
    from judgecards.judging.pool import Progress as Progress
    from judgecards.judging.prepared import PreparedItem as PreparedItem
    from judgecards.judging.prepared import item_id_of as item_id_of
    from judgecards.judging.replay import replay_stand_in as replay_stand_in
    from judgecards.judging.retry import RetryPolicy as RetryPolicy
    from judgecards.judging.retry import TransportCounters as TransportCounters
