"""Human labels and the calibration tables: label fields, import/export as CSV or JSONL, the
records the tables hold, their SQL (`CalibrationRepository`) and their migrations.

The storage layer of calibration: audits, estimates, cascades and alignment read and write
labels through it; it imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `calibration`'s face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): the result types that
# `calibration`'s functions return, imported from here when a caller names one.
_EXPORTS: dict[str, str] = {
    "AlignmentRun": "calibration.labels.records",
    "AnchorSet": "calibration.labels.records",
    "LabelImportReport": "calibration.labels.importer",
}
# `_SHARED`: what `calibration`'s face (documented there) and the other calibration
# packages and judgecards' cli, serve and report take from here.
_SHARED: dict[str, str] = {
    "AnchorItem": "calibration.labels.records",
    "AuditItem": "calibration.labels.records",
    "AuditRecord": "calibration.labels.records",
    "AuditScope": "calibration.labels.importer",
    "CalibrationRepository": "calibration.labels.repository",
    "Format": "calibration.labels.files",
    "Label": "calibration.labels.records",
    "LabelField": "calibration.labels.fields",
    "LabelKind": "calibration.labels.fields",
    "NewLabel": "calibration.labels.records",
    "WINNERS": "calibration.labels.fields",
    "export_labels": "calibration.labels.transfer",
    "format_of": "calibration.labels.files",
    "import_labels": "calibration.labels.importer",
    "judge_labels": "calibration.labels.fields",
    "label_fields": "calibration.labels.fields",
    "label_table": "calibration.labels.transfer",
    "open_store": "calibration.labels.migrations",
    "opened": "calibration.labels.migrations",
    "read_labels": "calibration.labels.transfer",
    "sheet_audit_id": "calibration.labels.files",
    "write_rows": "calibration.labels.files",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("calibration.labels", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from calibration.labels.fields import WINNERS as WINNERS
    from calibration.labels.fields import LabelField as LabelField
    from calibration.labels.fields import LabelKind as LabelKind
    from calibration.labels.fields import judge_labels as judge_labels
    from calibration.labels.fields import label_fields as label_fields
    from calibration.labels.files import Format as Format
    from calibration.labels.files import format_of as format_of
    from calibration.labels.files import sheet_audit_id as sheet_audit_id
    from calibration.labels.files import write_rows as write_rows
    from calibration.labels.importer import AuditScope as AuditScope
    from calibration.labels.importer import LabelImportReport as LabelImportReport
    from calibration.labels.importer import import_labels as import_labels
    from calibration.labels.migrations import open_store as open_store
    from calibration.labels.migrations import opened as opened
    from calibration.labels.records import AlignmentRun as AlignmentRun
    from calibration.labels.records import AnchorItem as AnchorItem
    from calibration.labels.records import AnchorSet as AnchorSet
    from calibration.labels.records import AuditItem as AuditItem
    from calibration.labels.records import AuditRecord as AuditRecord
    from calibration.labels.records import Label as Label
    from calibration.labels.records import NewLabel as NewLabel
    from calibration.labels.repository import CalibrationRepository as CalibrationRepository
    from calibration.labels.transfer import export_labels as export_labels
    from calibration.labels.transfer import label_table as label_table
    from calibration.labels.transfer import read_labels as read_labels
