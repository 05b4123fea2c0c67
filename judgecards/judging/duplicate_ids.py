"""Each id's first line while a JSONL file is checked, kept on disk rather than in memory.

Checking that ids are unique means remembering every id seen. A dict of them grows with the
file (tens of megabytes at a few hundred thousand lines), which is what streaming a run is meant
to avoid; a private temporary SQLite database (``sqlite3.connect("")``: a file SQLite deletes on
close) holds them instead, with a page cache of a couple of megabytes whatever the file's size.
It is not the run's `judgecards.Store`: nothing in it outlives the check.
"""

from __future__ import annotations

import sqlite3

__all__ = ["SeenIds"]

_CACHE_KIB = 2048


class SeenIds:
    """Ids seen so far and the line each was first seen on; use as a context manager."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("")
        self._db.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        self._db.execute("CREATE TABLE seen (id TEXT PRIMARY KEY, line INTEGER) WITHOUT ROWID")

    def first_line(self, item_id: str, line: int) -> int | None:
        """Record ``item_id`` as seen on ``line``; the line it was first seen on if not new."""
        added = self._db.execute(
            "INSERT OR IGNORE INTO seen (id, line) VALUES (?, ?)", (item_id, line)
        ).rowcount
        if added:
            return None
        row = self._db.execute("SELECT line FROM seen WHERE id = ?", (item_id,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SeenIds:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
