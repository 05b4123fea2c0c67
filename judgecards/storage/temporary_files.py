"""Temporary files written beside an output and moved into place: named so a later run can tell
its own from a dead run's, and remove the dead run's.

A command writes its output to a hidden temporary file in the same directory and renames it
over the output when complete, so a reader never sees half a file. A process killed while
writing (SIGKILL, a power cut) cannot remove its temporary file; the name carries the writer's
process id (``.out.jsonl.<pid>-<random>.tmp``), and the next successful write of the same output
removes every such file whose process no longer runs (`sweep_beside`). Files of a process still
running (another run writing the same output at the same moment) are left alone.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

__all__ = ["create_beside", "sweep_beside"]


def create_beside(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path`` (mode 0600, as `tempfile.mkstemp`): its descriptor
    and name."""
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp")


def sweep_beside(path: Path) -> list[Path]:
    """Remove the temporary files of ``path`` left by processes that no longer run; the files
    removed. Errors are ignored: a file another sweep removed first, a directory not listable."""
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)-[^/]*\.tmp$")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or _running(int(match.group(1))):
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): it runs
        return True
    return True
