"""Human labels of judged results: what can be labelled, and import/export as CSV or JSONL."""

from __future__ import annotations

from calibration.labels.transfer import ID_COLUMNS as ID_COLUMNS
from calibration.labels.transfer import META_COLUMNS as META_COLUMNS
from calibration.labels.transfer import WINNERS as WINNERS
from calibration.labels.transfer import AuditScope as AuditScope
from calibration.labels.transfer import Format as Format
from calibration.labels.transfer import Label as Label
from calibration.labels.transfer import LabelField as LabelField
from calibration.labels.transfer import LabelImportError as LabelImportError
from calibration.labels.transfer import LabelImportReport as LabelImportReport
from calibration.labels.transfer import LabelKind as LabelKind
from calibration.labels.transfer import LabelRow as LabelRow
from calibration.labels.transfer import export_labels as export_labels
from calibration.labels.transfer import format_of as format_of
from calibration.labels.transfer import import_labels as import_labels
from calibration.labels.transfer import judge_labels as judge_labels
from calibration.labels.transfer import label_fields as label_fields
from calibration.labels.transfer import label_table as label_table
from calibration.labels.transfer import read_labels as read_labels
from calibration.labels.transfer import read_rows as read_rows
from calibration.labels.transfer import spreadsheet_cell as spreadsheet_cell
from calibration.labels.transfer import write_rows as write_rows
