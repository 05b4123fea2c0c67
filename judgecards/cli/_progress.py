"""One progress reporter for ``score``, ``compare`` and ``eval``.

In a terminal it redraws one line in place; anywhere else (CI logs, ``nohup``, a pipe) it prints
a full line every few seconds, so a log shows a long run moving. Both show done/total, ok,
errors, transport retries, the rate and an ETA. A ticker thread redraws even when no item
finishes, so a run stuck behind rate limits shows its retries climbing rather than silence.

The ETA counts only items that needed a call: results served from the store at the start of a
resumed run arrive all at once and would otherwise make the run look many times faster (or, timed
from before they arrived, slower) than it is.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TextIO, TypeVar

import click

__all__ = [
    "INTERVAL_ENV",
    "ProgressReporter",
    "StagedProgress",
    "Stages",
    "for_judge",
    "reporting",
]

INTERVAL_ENV = "JUDGECARDS_PROGRESS_SECONDS"
"""Seconds between progress lines when stderr is not a terminal (default 5)."""

_DEFAULT_INTERVAL = 5.0
_TTY_REDRAW = 0.1  # at most ten redraws a second in a terminal


def _clock_text(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _interval_from_env() -> float:
    raw = os.environ.get(INTERVAL_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return _DEFAULT_INTERVAL
    return value if value > 0 else _DEFAULT_INTERVAL


class ProgressReporter:
    """Counts finished items and shows them; pass it as the ``progress`` callback of a batch.

    Args:
        label: what is happening, e.g. ``judging``.
        unit: what is counted, e.g. ``items`` or ``judgments`` (used in the interrupt summary).
        stream: where to write (default stderr).
        tty: draw in place; default: whether ``stream`` is a terminal.
        interval: seconds between lines when not a terminal (default: $JUDGECARDS_PROGRESS_SECONDS
            or 5).
        retries: a live count of transport retries in this run (read on every line); without it,
            the retries recorded on finished results are summed.
        rate_limited: a live count of the retries that followed a 429, shown beside them.
        clock: monotonic seconds; injectable for tests.
        ticker: redraw from a background thread even when nothing finishes.
        total: the number of items, when known before the first finishes (so the first line,
            drawn by the ticker while the first calls are out, shows it too).
    """

    def __init__(  # noqa: PLR0913  the progress line's keyword-only settings
        self,
        label: str = "judging",
        *,
        unit: str = "items",
        stream: TextIO | None = None,
        tty: bool | None = None,
        interval: float | None = None,
        retries: Callable[[], int] | None = None,
        rate_limited: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        ticker: bool = True,
        total: int | None = None,
    ) -> None:
        self.label = label
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(tty if tty is not None else _isatty(self.stream))
        self.interval = interval if interval is not None else _interval_from_env()
        self._live_retries = retries
        self._rate_limited = rate_limited
        self._clock = clock
        self.started = clock()
        self.total: int | None = total
        self.done = 0
        self.ok = 0
        self.errors = 0
        self.cached = 0
        self.fresh = 0  # finished items that needed a call
        self._recorded_retries = 0
        self._last_line = -float("inf")
        self._drawn = False
        self._final_drawn = False
        self._closed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if ticker:
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------------ the callback

    def __call__(self, done: int, total: int, result: Any) -> None:
        """``progress(done, total, result)``, as `judgecards.Judge.score_many` calls it."""
        with self._lock:
            self.total = total
            self.done = done
            if getattr(result, "ok", False):
                self.ok += 1
            else:
                self.errors += 1
            if getattr(result, "cached", False):
                self.cached += 1
            else:
                self.fresh += 1
            self._recorded_retries += int(getattr(result, "transport_retries", 0) or 0)
        self._maybe_draw(final=done >= total)

    @property
    def retries(self) -> int:
        """Transport retries so far: the live counter when given, else those on finished results."""
        if self._live_retries is not None:
            return self._live_retries()
        return self._recorded_retries

    @property
    def rate(self) -> float | None:
        """Items per second that needed a call; ``None`` until one has finished."""
        elapsed = self._clock() - self.started
        if self.fresh == 0 or elapsed <= 0:
            return None
        return self.fresh / elapsed

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate; ``None`` while unknown."""
        rate = self.rate
        if self.total is None or rate is None:
            return None
        return (self.total - self.done) / rate

    def line(self) -> str:
        """The progress line as shown (without a newline)."""
        total = self.total
        count = f"{self.done}/{total}" if total is not None else f"{self.done}"
        percent = f" ({self.done / total:.0%})" if total else ""
        rate = self.rate
        eta = self.eta
        parts = [
            f"{self.label} {count}{percent}",
            f"ok {self.ok}",
            f"errors {self.errors}",
            f"retries {self.retries}",
        ]
        limited = self._rate_limited() if self._rate_limited is not None else 0
        if limited:
            parts[-1] += f" ({limited} after 429)"
        if self.cached:
            parts.append(f"stored {self.cached}")
        parts.append(f"{rate:.1f}/s" if rate is not None else "-/s")
        parts.append(f"elapsed {_clock_text(self._clock() - self.started)}")
        if total is not None and self.done >= total:
            parts.append("done")
        else:
            parts.append(f"ETA {_clock_text(eta)}" if eta is not None else "ETA ?")
        return "  ".join(parts)

    # ------------------------------------------------------------------ drawing

    def _maybe_draw(self, *, final: bool = False) -> None:
        now = self._clock()
        with self._lock:
            wait = _TTY_REDRAW if self.tty else self.interval
            if not final and now - self._last_line < wait:
                return
            self._last_line = now
            self._draw()

    def _draw(self) -> None:
        text = self.line()
        self._final_drawn = self.total is not None and self.done >= self.total
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
        else:
            self.stream.write(text + "\n")
        self._drawn = True
        self.stream.flush()

    def _tick(self) -> None:
        period = 1.0 if self.tty else self.interval
        while not self._stop.wait(period):
            if self.total is not None or self._live_retries is not None:
                self._maybe_draw()

    def close(self) -> None:
        """Stop the ticker and end the display with a final line (idempotent)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.total is not None and not self._final_drawn:
                self._draw()
            if self.tty and self._drawn:
                self.stream.write("\n")
                self.stream.flush()

    def interrupted_text(self, *, where: str) -> str:
        """What an interrupted run kept, and how to go on."""
        finished = self.fresh
        lines = [
            f"Interrupted after {_clock_text(self._clock() - self.started)}: "
            f"{finished} {self.unit} finished in this run and saved in {where}"
            + (f" ({self.cached} were already stored)" if self.cached else "")
            + (f"; {self.total - self.done} not finished" if self.total is not None else "")
            + ".",
            "Run the same command again to resume: saved results are not judged again "
            "(error records are retried).",
        ]
        return "\n".join(lines)


def for_judge(
    judge: Any, label: str = "judging", *, unit: str = "items", total: int | None = None
) -> ProgressReporter:
    """A reporter showing ``judge``'s live transport retries (`judgecards.judging.retry.TransportCounters`);
    ``total``: the items to judge, when known before the first finishes."""
    counters = judge.transport_counters
    return ProgressReporter(
        label,
        unit=unit,
        retries=lambda: int(counters.retries),
        rate_limited=lambda: int(counters.rate_limited),
        total=total,
    )


class StagedProgress:
    """One progress line per judge of a cascade, its counts starting afresh with each judge.

    A cascade calls each judge's batch in turn with the same callback, and each batch counts
    from 0 to what it was sent: one reporter for all would show the second judge's ``5/40``
    beside the first judge's ``ok 200``. Results say which model judged them, so the stage
    changes when a result comes from another judge.
    """

    def __init__(
        self, judges: Sequence[Any], label: str = "judging", *, unit: str = "items"
    ) -> None:
        self._judges = {judge.model: judge for judge in judges}
        self._label = label
        self._unit = unit
        self._stages: list[ProgressReporter] = []

    def __call__(self, done: int, total: int, result: Any) -> None:
        model = result.model
        if not self._stages or self._stages[-1].label != self._stage_label(model):
            if self._stages:
                self._stages[-1].close()
            judge = self._judges[model]
            self._stages.append(for_judge(judge, self._stage_label(model), unit=self._unit))
        self._stages[-1](done, total, result)

    def _stage_label(self, model: str) -> str:
        return f"{self._label} with {model}"

    def close(self) -> None:
        for stage in self._stages:
            stage.close()

    def interrupted_text(self, *, where: str) -> str:
        """What the judges finished before the interrupt, and how to go on."""
        if not self._stages:
            return ProgressReporter(self._label, unit=self._unit, ticker=False).interrupted_text(
                where=where
            )
        finished = sum(stage.fresh for stage in self._stages)
        stored = sum(stage.cached for stage in self._stages)
        lines = [
            f"Interrupted: {finished} {self._unit} finished in this run and saved in {where}"
            + (f" ({stored} were already stored)" if stored else "")
            + f", by {len(self._stages)} of {len(self._judges)} judges.",
            "Run the same command again to resume: saved results are not judged again "
            "(error records are retried).",
        ]
        return "\n".join(lines)


class Stages:
    """Progress on stderr for a command whose work is not a count of items (``report``, ``audit
    ingest``, ``audit report``: bootstrap intervals and plots, tens of seconds on real data): a
    line naming each stage as it starts, ``still working`` with the time so far every interval
    (as `ProgressReporter`'s lines) while it runs, and how long it took when it ends.

    Args:
        command: the line's prefix, e.g. ``audit report``.
        stream: where to write (default stderr).
        interval: seconds between ``still working`` lines (default: $JUDGECARDS_PROGRESS_SECONDS
            or 5).
        clock: monotonic seconds; injectable for tests.
        ticker: write the ``still working`` lines from a background thread.
    """

    def __init__(
        self,
        command: str,
        *,
        stream: TextIO | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        ticker: bool = True,
    ) -> None:
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval if interval is not None else _interval_from_env()
        self._clock = clock
        self._ticker = ticker

    @contextmanager
    def stage(self, what: str) -> Iterator[None]:
        """Run one stage (``what``: e.g. ``measuring agreement``) under its lines."""
        started = self._clock()
        self._write(f"{what}...")
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self.interval):
                self._write(f"{what}: still working, {_clock_text(self._clock() - started)}")

        thread = threading.Thread(target=tick, name="stages", daemon=True) if self._ticker else None
        if thread is not None:
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread is not None:
                thread.join()
        self._write(f"{what}: done in {self._clock() - started:.1f}s")

    def _write(self, text: str) -> None:
        self.stream.write(f"{self.command}: {text}\n")
        self.stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Reporter(Protocol):
    """What `reporting` needs of a progress display (`ProgressReporter`, `StagedProgress`)."""

    def __call__(self, done: int, total: int, result: Any) -> None: ...
    def close(self) -> None: ...
    def interrupted_text(self, *, where: str) -> str: ...


R = TypeVar("R", bound=Reporter)


@contextmanager
def reporting(reporter: R, *, where: str) -> Iterator[R]:
    """Run a batch under ``reporter``; on Ctrl-C say what was saved and exit 130.

    Every finished item is already in the database when its callback runs, so the counts
    printed are what a re-run will find.
    """
    try:
        yield reporter
    except KeyboardInterrupt:
        reporter.close()
        click.echo(reporter.interrupted_text(where=where), err=True)
        raise click.exceptions.Exit(130) from None
    finally:
        reporter.close()
