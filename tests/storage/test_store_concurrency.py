"""Processes racing to open one new database: every one succeeds, the schema is migrated once.

Before migrations ran under ``BEGIN IMMEDIATE`` (and the switch to WAL waited for its lock), 4
processes opening a new ``--db`` together failed with "database is locked" in 26 to 39 of 40
trials, despite the 30 s busy timeout.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from contextlib import closing
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

PROCESSES = 4
TRIALS = 10


def _open_new_databases(
    directory: str, barrier: Barrier, calibration_tables: bool, errors: Any
) -> None:
    from calibration.labels import open_store
    from judgecards.storage import Store

    for trial in range(TRIALS):
        path = Path(directory) / f"trial-{trial}.db"
        barrier.wait(timeout=60)  # every process opens the same new file at the same moment
        try:
            (open_store(path) if calibration_tables else Store(path)).close()
        except Exception as error:  # the test reports every failure
            errors.put(f"trial {trial}: {error!r}")


def test_processes_opening_a_new_database_together_all_succeed(tmp_path: Path) -> None:
    # Half the processes open a plain judgecards store, half the calibration API (both sets of
    # migrations, judgecards' then calibration's), all on the same new file at the same moment.
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    errors = context.Queue()
    workers = [
        context.Process(
            target=_open_new_databases, args=(str(tmp_path), barrier, index % 2 == 0, errors)
        )
        for index in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0] * PROCESSES
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
    for trial in range(TRIALS):
        path = tmp_path / f"trial-{trial}.db"
        with closing(sqlite3.connect(path)) as db:
            applied = db.execute(
                "SELECT migration_set, name FROM _sqlite_migrations ORDER BY id"
            ).fetchall()
            journal = db.execute("PRAGMA journal_mode").fetchone()
        assert len(applied) == len(set(applied))  # each migration applied exactly once
        assert ("judgecards", "m001_results_and_cache") in applied
        assert ("calibration", "m001_labels_audits_anchors") in applied
        assert journal == ("wal",)
