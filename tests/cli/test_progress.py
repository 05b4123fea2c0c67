"""The progress reporter shared by score, compare and eval: lines in logs, a true ETA, retries."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from judgecards.cli import cli
from judgecards.cli._progress import ProgressReporter, Stages
from tests.builders import wait_for
from tests.fakes.server import FakeRequest, FakeServer


@dataclass
class Done:
    """What the reporter reads from a finished result."""

    ok: bool = True
    cached: bool = False
    transport_retries: int = 0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reporter(
    clock: Clock, *, tty: bool = False, **options: object
) -> tuple[ProgressReporter, io.StringIO]:
    stream = io.StringIO()
    return ProgressReporter(stream=stream, tty=tty, clock=clock, ticker=False, **options), stream  # type: ignore[arg-type]


def test_without_a_terminal_a_line_every_interval_with_counts_rate_and_eta() -> None:
    clock = Clock()
    progress, stream = reporter(clock, interval=5.0)
    progress(1, 100, Done())  # the first result prints at once, so a log shows the run started
    for done in range(2, 11):  # 9 more over 4.5 s: too soon for another line
        clock.now += 0.5
        progress(done, 100, Done(ok=done != 7, transport_retries=2 if done == 3 else 0))
    assert stream.getvalue().count("\n") == 1
    clock.now += 0.5  # 5 s after the first line
    progress(11, 100, Done())
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    # 11 items in 5 s = 2.2/s; 89 left / 2.2 = 40.5 s
    assert lines[1] == (
        "judging 11/100 (11%)  ok 10  errors 1  retries 2  2.2/s  elapsed 0:05  ETA 0:40"
    )


def test_the_eta_ignores_results_served_from_the_store_at_the_start() -> None:
    clock = Clock()
    progress, stream = reporter(clock, interval=1.0)
    for done in range(1, 51):  # a resumed run: 50 stored results arrive at once
        progress(done, 100, Done(cached=True))
    for done in range(51, 56):  # then one call finishes per second
        clock.now += 1.0
        progress(done, 100, Done())
    last = stream.getvalue().splitlines()[-1]
    # 5 calls in 5 s = 1/s and 45 items left: 45 s (counting the 55 done would say ~4 s)
    assert last.endswith("stored 50  1.0/s  elapsed 0:05  ETA 0:45"), last


def test_in_a_terminal_one_line_is_redrawn_and_finished_with_a_newline() -> None:
    clock = Clock()
    progress, stream = reporter(clock, tty=True)
    for done in range(1, 5):
        clock.now += 0.9
        progress(done, 4, Done())
    progress.close()
    text = stream.getvalue()
    assert text.count("\r\x1b[2K") == 4 and text.endswith("\n") and text.count("\n") == 1
    final = text.rsplit("\r\x1b[2K", 1)[1]
    assert final == "judging 4/4 (100%)  ok 4  errors 0  retries 0  1.1/s  elapsed 0:04  done\n"


def test_the_eta_of_a_short_run_is_seconds_not_minutes() -> None:
    # The reported case: a 3.6 s run whose terminal bar promised 00:05:04.
    clock = Clock()
    progress, stream = reporter(clock, tty=True)
    for done in range(1, 37):
        clock.now += 0.1
        progress(done, 72, Done())
    assert progress.eta is not None and abs(progress.eta - 3.6) < 1e-9
    assert "ETA 0:04" in stream.getvalue().rsplit("\r", 1)[1]


def test_live_retries_and_a_ticker_when_nothing_finishes() -> None:
    retries, limited = [0], [0]
    stream = io.StringIO()
    progress = ProgressReporter(
        stream=stream, tty=False, interval=0.05, retries=lambda: retries[0],
        rate_limited=lambda: limited[0],
    )  # fmt: skip
    try:
        progress(1, 3, Done())
        retries[0], limited[0] = 7, 5  # rate-limited calls retried while no item finishes
        wait_for(lambda: "retries 7" in stream.getvalue(), what="a ticker line with the retries")
    finally:
        progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("judging 1/3 (33%)  ok 1  errors 0  retries 0")
    assert any(
        "judging 1/3 (33%)  ok 1  errors 0  retries 7 (5 after 429)" in line for line in lines[1:]
    )


def test_the_first_line_shows_the_total_before_any_item_finishes() -> None:
    # Issue 22 item 23: the ticker's first line, drawn while the first calls were out, read
    # "judging 0  ok 0 ..." with no total (it was learnt from the first result only).
    clock = Clock()
    progress, stream = reporter(clock, total=40, retries=lambda: 3)
    clock.now += 5
    assert progress.line().startswith("judging 0/40 (0%)  ok 0  errors 0  retries 3")
    progress.close()  # interrupted before any item finished: the line drawn says how far
    assert stream.getvalue().startswith("judging 0/40 (0%)")


def test_a_stage_says_when_it_starts_and_how_long_it_took() -> None:
    clock = Clock()
    stream = io.StringIO()
    stages = Stages("audit report", stream=stream, clock=clock, ticker=False)
    with stages.stage("measuring agreement"):
        clock.now += 12.5
    assert stream.getvalue().splitlines() == [
        "audit report: measuring agreement...",
        "audit report: measuring agreement: done in 12.5s",
    ]


def test_interrupted_text_counts_what_was_saved() -> None:
    clock = Clock()
    progress, _ = reporter(clock, unit="judgments")
    progress(1, 10, Done(cached=True))
    progress(2, 10, Done())
    progress(3, 10, Done(ok=False))
    clock.now += 65
    assert progress.interrupted_text(where="x.db") == (
        "Interrupted after 1:05: 2 judgments finished in this run and saved in x.db "
        "(1 were already stored); 7 not finished.\n"
        "Run the same command again to resume: saved results are not judged again "
        "(error records are retried)."
    )


def test_score_prints_progress_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": i, "question": "q", "gold_answer": "g", "model_output": f"a{i}"})
            + "\n"
            for i in range(5)
        )
    )
    result = CliRunner().invoke(
        cli,
        ["score", "--card", "reference@1", "--model", "mock:judge", str(items),
         "--output", str(tmp_path / "o.jsonl"), "--db", str(tmp_path / "p.db")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("judging ")]
    assert lines[0].startswith("judging 1/5 (20%)  ok 1  errors 0  retries 0")
    assert re.fullmatch(
        r"judging 5/5 \(100%\)  ok 5  errors 0  retries 0  [\d.]+/s  elapsed \d+:\d\d  done",
        lines[-1],
    )
    assert "\r" not in result.stderr


def test_score_shows_the_transport_retries_it_made(
    tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    failed: list[str] = []

    def once(request: FakeRequest) -> tuple[int, dict[str, Any]] | None:
        if failed:
            return None
        failed.append(request.path)
        return 500, {"error": {"message": "overloaded", "type": "server_error"}}

    server = serve(fault=once)
    items = tmp_path / "items.jsonl"
    items.write_text(
        json.dumps({"id": 1, "question": "q", "gold_answer": "g", "model_output": "a"}) + "\n"
    )
    result = CliRunner(env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}).invoke(
        cli,
        ["score", "--card", "reference@1", "--model", "openai:local-judge", str(items),
         "--output", str(tmp_path / "o.jsonl"), "--db", str(tmp_path / "r.db")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert server.requests == 2
    final = [line for line in result.stderr.splitlines() if line.startswith("judging ")][-1]
    assert final.startswith("judging 1/1 (100%)  ok 1  errors 0  retries 1  ")


def test_a_cascade_shows_each_judge_on_a_line_of_its_own_counting_from_zero(
    tmp_path: Path, capsys: Any
) -> None:
    """One reporter for the whole cascade showed the second judge's ``2/2`` beside the first
    judge's ``ok 5``: the counts must start again with each judge, named on its line."""
    from judgecards import Judge
    from judgecards.cli._progress import StagedProgress, reporting

    items = [{"id": f"q{i}", "question": f"Q{i}?", "answer": f"A{i}."} for i in range(5)]
    db = tmp_path / "cascade.db"
    with (
        Judge("single@1", "mock:cheap", db=db) as cheap,
        Judge("single@1", "mock:strong", db=db) as strong,
    ):
        with reporting(StagedProgress([cheap, strong]), where=str(db)) as progress:
            cheap.score_many(items, progress=progress)
            strong.score_many(items[:2], progress=progress)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("judging")]
    cheap_lines = [line for line in lines if line.startswith("judging with mock:cheap ")]
    strong_lines = [line for line in lines if line.startswith("judging with mock:strong ")]
    assert lines == cheap_lines + strong_lines  # the first judge's, then the second's
    assert cheap_lines[-1].startswith("judging with mock:cheap 5/5 (100%)  ok 5  errors 0")
    assert strong_lines[0].startswith("judging with mock:strong 1/2 (50%)  ok 1  errors 0")
    assert strong_lines[-1].startswith("judging with mock:strong 2/2 (100%)  ok 2  errors 0")
    assert strong_lines[-1].endswith("done")
    assert progress.interrupted_text(where="x.db").startswith(
        "Interrupted: 7 items finished in this run and saved in x.db, by 2 of 2 judges."
    )
