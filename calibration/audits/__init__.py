"""Drift audits and what serves them: spot-check samples, anchor sets, the audit report and its
gate, the blind labelling queue, and the latest calibration of a card version.

Built on labels, statistics and estimates; cascades and alignment build on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `calibration`'s face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): the result types that
# `calibration`'s functions return, imported from here when a caller names one.
_EXPORTS: dict[str, str] = {
    "AuditReport": "calibration.audits.report",
    "AuditSummary": "calibration.audits.report",
    "CalibrationStatus": "calibration.audits.status",
    "LabelQueueError": "calibration.audits.queue_records",
    "PositionPreference": "calibration.audits.queue_records",
    "QueueItem": "calibration.audits.queue_records",
    "QueueSettings": "calibration.audits.queue_records",
}
# `_SHARED`: what `calibration`'s face (documented there) and the other calibration
# packages and judgecards' cli, serve and report take from here.
_SHARED: dict[str, str] = {
    "Audit": "calibration.audits.audit",
    "FieldAgreement": "calibration.audits.report",
    "GateCheck": "calibration.audits.report",
    "JudgeAnswer": "calibration.audits.queue_records",
    "LabelQueue": "calibration.audits.queue",
    "MAX_NOTE_CHARS": "calibration.audits.queue_records",
    "Progress": "calibration.audits.queue_records",
    "QueueSummary": "calibration.audits.queue_records",
    "calibrations": "calibration.audits.status",
    "humans_by_result": "calibration.audits.analysis",
    "latest_calibration": "calibration.audits.status",
    "primary_order": "calibration.audits.analysis",
    "warn_if_uncalibrated": "calibration.audits.status",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration.audits", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from calibration.audits.analysis import humans_by_result as humans_by_result
    from calibration.audits.analysis import primary_order as primary_order
    from calibration.audits.audit import Audit as Audit
    from calibration.audits.queue import LabelQueue as LabelQueue
    from calibration.audits.queue_records import MAX_NOTE_CHARS as MAX_NOTE_CHARS
    from calibration.audits.queue_records import JudgeAnswer as JudgeAnswer
    from calibration.audits.queue_records import LabelQueueError as LabelQueueError
    from calibration.audits.queue_records import PositionPreference as PositionPreference
    from calibration.audits.queue_records import Progress as Progress
    from calibration.audits.queue_records import QueueItem as QueueItem
    from calibration.audits.queue_records import QueueSettings as QueueSettings
    from calibration.audits.queue_records import QueueSummary as QueueSummary
    from calibration.audits.report import AuditReport as AuditReport
    from calibration.audits.report import AuditSummary as AuditSummary
    from calibration.audits.report import FieldAgreement as FieldAgreement
    from calibration.audits.report import GateCheck as GateCheck
    from calibration.audits.status import CalibrationStatus as CalibrationStatus
    from calibration.audits.status import calibrations as calibrations
    from calibration.audits.status import latest_calibration as latest_calibration
    from calibration.audits.status import warn_if_uncalibrated as warn_if_uncalibrated
