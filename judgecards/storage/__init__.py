"""The results database: `Store`, its migrations and connections, results and their grouped
saves, exports, and files written atomically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `judgecards`' face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): names a user imports from here.
_EXPORTS: dict[str, str] = {
    "comparisons_table": "judgecards.storage.export",
    "results_table": "judgecards.storage.export",
    "write_table": "judgecards.storage.export",
}
# `_SHARED`: what `judgecards`' face (documented there), the other subpackages, cli, serve,
# report and calibration take from here.
_SHARED: dict[str, str] = {
    "CacheEntry": "judgecards.storage.store",
    "Column": "judgecards.storage.export",
    "ColumnKind": "judgecards.storage.export",
    "Database": "judgecards.storage.database",
    "EXPORT_FORMATS": "judgecards.storage.export",
    "ExportFormat": "judgecards.storage.export",
    "GroupedSaves": "judgecards.storage.grouped_saves",
    "JudgeResult": "judgecards.storage.results",
    "Store": "judgecards.storage.store",
    "Table": "judgecards.storage.export",
    "TokenUsage": "judgecards.storage.results",
    "Transaction": "judgecards.storage.database",
    "card_filter": "judgecards.storage.store",
    "create_beside": "judgecards.storage.temporary_files",
    "default_db_path": "judgecards.storage.store",
    "export_format": "judgecards.storage.export",
    "from_spreadsheet_cell": "judgecards.storage.csv_safety",
    "import_without_dataframe_libraries": "judgecards.storage._lean_sqlite_utils",
    "insert_sql": "judgecards.storage.database",
    "require_pyarrow": "judgecards.storage.export",
    "spreadsheet_cell": "judgecards.storage.csv_safety",
    "sweep_beside": "judgecards.storage.temporary_files",
    "time_bound": "judgecards.storage.export",
    "write_table_file": "judgecards.storage.export",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("judgecards.storage", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from judgecards.storage._lean_sqlite_utils import (
        import_without_dataframe_libraries as import_without_dataframe_libraries,
    )
    from judgecards.storage.csv_safety import from_spreadsheet_cell as from_spreadsheet_cell
    from judgecards.storage.csv_safety import spreadsheet_cell as spreadsheet_cell
    from judgecards.storage.database import Database as Database
    from judgecards.storage.database import Transaction as Transaction
    from judgecards.storage.database import insert_sql as insert_sql
    from judgecards.storage.export import EXPORT_FORMATS as EXPORT_FORMATS
    from judgecards.storage.export import Column as Column
    from judgecards.storage.export import ColumnKind as ColumnKind
    from judgecards.storage.export import ExportFormat as ExportFormat
    from judgecards.storage.export import Table as Table
    from judgecards.storage.export import comparisons_table as comparisons_table
    from judgecards.storage.export import export_format as export_format
    from judgecards.storage.export import require_pyarrow as require_pyarrow
    from judgecards.storage.export import results_table as results_table
    from judgecards.storage.export import time_bound as time_bound
    from judgecards.storage.export import write_table as write_table
    from judgecards.storage.export import write_table_file as write_table_file
    from judgecards.storage.grouped_saves import GroupedSaves as GroupedSaves
    from judgecards.storage.results import JudgeResult as JudgeResult
    from judgecards.storage.results import TokenUsage as TokenUsage
    from judgecards.storage.store import CacheEntry as CacheEntry
    from judgecards.storage.store import Store as Store
    from judgecards.storage.store import card_filter as card_filter
    from judgecards.storage.store import default_db_path as default_db_path
    from judgecards.storage.temporary_files import create_beside as create_beside
    from judgecards.storage.temporary_files import sweep_beside as sweep_beside
