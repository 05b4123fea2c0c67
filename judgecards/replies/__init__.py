"""A judge's reply read: parsing, structured output, verdict rules and G-Eval scores.

Reads replies against a card; stores nothing and calls no provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `judgecards`' face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): names a user imports from here.
_EXPORTS: dict[str, str] = {
    "strict_schema": "judgecards.replies.structured_output",
    "weighted_scores": "judgecards.replies.geval",
}
# `_SHARED`: what `judgecards`' face (documented there), the other subpackages, cli, serve,
# report and calibration take from here.
_SHARED: dict[str, str] = {
    "sends_natively": "judgecards.replies.structured_output",
    "reply_text": "judgecards.replies.structured_output",
    "native_refused": "judgecards.replies.structured_output",
    "native_method_of": "judgecards.replies.structured_output",
    "extraction_of": "judgecards.replies.structured_output",
    "NativeProbe": "judgecards.replies.structured_output",
    "OUTPUT_MODES": "judgecards.replies.structured_output",
    "OutputMode": "judgecards.replies.structured_output",
    "decide": "judgecards.replies.verdicts",
    "guards_schema": "judgecards.replies.structured_output",
    "parse_reply": "judgecards.replies.parse",
    "restates_fields": "judgecards.replies.structured_output",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("judgecards.replies", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from judgecards.replies.geval import weighted_scores as weighted_scores
    from judgecards.replies.parse import parse_reply as parse_reply
    from judgecards.replies.structured_output import OUTPUT_MODES as OUTPUT_MODES
    from judgecards.replies.structured_output import NativeProbe as NativeProbe
    from judgecards.replies.structured_output import OutputMode as OutputMode
    from judgecards.replies.structured_output import extraction_of as extraction_of
    from judgecards.replies.structured_output import guards_schema as guards_schema
    from judgecards.replies.structured_output import native_method_of as native_method_of
    from judgecards.replies.structured_output import native_refused as native_refused
    from judgecards.replies.structured_output import reply_text as reply_text
    from judgecards.replies.structured_output import restates_fields as restates_fields
    from judgecards.replies.structured_output import sends_natively as sends_natively
    from judgecards.replies.structured_output import strict_schema as strict_schema
    from judgecards.replies.verdicts import decide as decide
