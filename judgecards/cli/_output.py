"""Output files a command writes after a run: checked before any call, replaced atomically.

A run pays for every call before it writes its output, so an output path that cannot be written
must be found out first, not after (`OutputFile.check`). The file is written to a temporary file
beside it and moved into place, so a reader never sees half a file; if writing fails (a full
disk), the temporary file is removed and the old output, if any, is left as it was. The results
are in the database by then, so a re-run writes the file without calling the judge again. A
temporary file left by a killed run is removed by the next successful write
(`judgecards.storage.temporary_files`).

Paths that are not regular files (``/dev/stdout``, a named pipe) are written in place.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TypeVar

from judgecards.errors import OutputError
from judgecards.storage import create_beside, sweep_beside

__all__ = ["OutputFile"]

T = TypeVar("T")


def _reason(error: OSError) -> str:
    if error.errno == errno.ENOSPC:
        return "no space left on the device"
    return error.strerror or str(error)


def _mode_for(path: Path) -> int:
    """The permissions a plain ``open(path, "w")`` would give (mkstemp's are owner-only)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class OutputFile:
    """One output path of a command.

    Args:
        path: where the file goes.
        option: the command-line option naming it, for messages (e.g. ``--output``).
    """

    def __init__(self, path: Path, *, option: str = "--output") -> None:
        self.path = path
        self.option = option

    def _in_place(self) -> bool:
        try:
            mode = self.path.stat().st_mode
        except OSError:
            return False
        return not stat.S_ISREG(mode)

    def check(self) -> None:
        """Make sure the path can be written, by creating (and removing) a file beside it.

        Raises:
            OutputError: the directory is missing, the path is a directory, or nothing may be
                created there; nothing has been called or written.
        """
        path = self.path
        if path.is_dir():
            raise OutputError(f"{self.option} is a directory, not a file", file=path)
        if self._in_place():
            if not os.access(path, os.W_OK):
                raise OutputError(f"{self.option} is not writable", file=path)
            return
        parent = path.parent
        if not parent.is_dir():
            what = "is not a directory" if parent.exists() else "does not exist"
            raise OutputError(f"{self.option}'s directory {parent} {what}", file=path)
        if path.exists() and not os.access(path, os.W_OK):
            raise OutputError(f"{self.option} exists and is not writable", file=path)
        try:
            with tempfile.NamedTemporaryFile(dir=parent, prefix=f".{path.name}.", suffix=".check"):
                pass
        except OSError as error:
            raise OutputError(
                f"cannot create files in {parent}: {_reason(error)}", file=path
            ) from None

    def write_lines(self, lines: Iterable[str], *, note: str = "") -> None:
        """Write ``lines`` (each without its newline) as the whole file, atomically.

        Args:
            lines: the file's lines.
            note: appended to an error message (e.g. where the results are kept meanwhile).

        Raises:
            OutputError: writing failed (e.g. the disk is full); no temporary file is left and
                an existing output is untouched.
        """

        def write(handle: IO[bytes]) -> None:
            for line in lines:
                handle.write((line + "\n").encode("utf-8"))

        self.write_with(write, note=note)

    def write_with(self, write: Callable[[IO[bytes]], T], *, note: str = "") -> T:
        """Let ``write`` fill the file through an open binary handle, atomically; its result.

        For streamed output (an export read from the database page by page): the rows go to
        a temporary file beside the path, moved into place only when ``write`` returns.

        Raises:
            OutputError: writing failed (e.g. the disk is full); no temporary file is left and
                an existing output is untouched.
        """
        if self._in_place():
            try:
                with self.path.open("wb") as handle:
                    return write(handle)
            except OSError as error:
                raise OutputError(f"cannot write: {_reason(error)}{note}", file=self.path) from None
        tmp: str | None = None
        try:
            descriptor, tmp = create_beside(self.path)
            os.fchmod(descriptor, _mode_for(self.path))
            with os.fdopen(descriptor, "wb") as handle:
                result = write(handle)
            os.replace(tmp, self.path)
            tmp = None
            sweep_beside(self.path)  # a killed run's temporary file
            return result
        except OSError as error:
            raise OutputError(f"cannot write: {_reason(error)}{note}", file=self.path) from None
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
