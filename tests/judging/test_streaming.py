"""Streaming judgments: `Judge.ascore_stream` reads items only as a bounded window frees, yields
results in input order, and stops cleanly; ``judgecards score`` checks every line in a first pass
and then judges and writes line by line, never holding the file.

Providers are the real SDKs over a scripted transport (`tests.fakes.http`), or the mock.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from judgecards import Judge, TransportError
from judgecards.judging.pool import LOOKUP_CHUNK, window_for
from tests.builders import REPO, run_cli, write_jsonl
from tests.fakes.http import Script, openai_chat, reference_judgment, unauthorized
from tests.fakes.judges import openai_judge

GOOD = openai_chat(reference_judgment())


def item(i: int) -> dict[str, Any]:
    return {
        "id": f"i{i}",
        "question": "Name the largest planet in the solar system.",
        "gold_answer": "Jupiter.",
        "model_output": f"Candidate {i}: Jupiter.",
    }


class Counted:
    """A generator of items that counts how many have been read."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.read = 0
        self.closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            for i in range(self.n):
                self.read += 1
                yield item(i)
        finally:
            self.closed = True


def index_of(request: httpx2.Request) -> int:
    prompt = json.dumps(json.loads(request.content)["messages"])
    return int(prompt.split("Candidate ", 1)[1].split(":", 1)[0])


async def collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [result async for result in stream]


def test_items_are_read_only_as_the_window_frees(tmp_path: Path) -> None:
    # Before: every item was read and prepared before the first call (a list of all of them).
    source = Counted(5_000)
    judge = Judge("reference@1", "mock:judge", db=tmp_path / "j.db")

    async def first() -> tuple[Any, int]:
        stream = judge.ascore_stream(iter(source), concurrency=4)
        assert isinstance(stream, AsyncGenerator)  # it can be closed early
        result = await anext(stream)
        read = source.read
        await stream.aclose()
        return result, read

    result, read = asyncio.run(first())
    judge.close()
    assert result.item_id == "i0"
    assert read <= window_for(4) + LOOKUP_CHUNK
    assert source.closed  # closing the stream closed the source


def test_a_long_stream_holds_only_a_window_of_requests_and_results(tmp_path: Path) -> None:
    # Before: the mock provider kept every request it was sent (a 200,000-item dry run held
    # 200,000 prompts), so memory grew with the run even though the pool did not.
    import gc

    from judgecards.providers.base import CompletionRequest
    from judgecards.storage import JudgeResult

    judge = Judge("reference@1", "mock:judge", db=tmp_path / "j.db")
    live: dict[str, int] = {}

    async def run() -> None:
        count = 0
        async for _ in judge.ascore_stream(iter(Counted(3_000)), concurrency=8):
            count += 1
            if count == 2_900:
                gc.collect()
                objects = gc.get_objects()
                live["requests"] = sum(isinstance(o, CompletionRequest) for o in objects)
                live["results"] = sum(isinstance(o, JudgeResult) for o in objects)

    asyncio.run(run())
    judge.close()
    bound = window_for(8) + LOOKUP_CHUNK
    assert live["requests"] <= bound and live["results"] <= bound, live


def test_results_come_in_input_order_whatever_finishes_first(tmp_path: Path) -> None:
    answered = 0

    async def reply(request: httpx2.Request) -> httpx2.Response:
        # The first item is answered last, whatever the machine's speed or the limiter's start.
        nonlocal answered
        if index_of(request) == 0:
            while answered < 11:
                await asyncio.sleep(0.001)
        answered += 1
        return openai_chat(reference_judgment())

    script = Script(default=reply)
    # Prompt output: with auto, the first native request goes alone (NativeProbe) and finishes
    # first; this test needs all 12 in flight at once.
    judge = openai_judge(script, db=tmp_path / "j.db", output_mode="prompt")
    finished: list[str | None] = []

    async def source() -> AsyncIterator[dict[str, Any]]:
        for i in range(12):
            yield item(i)

    stream = judge.ascore_stream(
        source(), concurrency=12, total=12, progress=lambda d, t, r: finished.append(r.item_id)
    )
    results = asyncio.run(collect(stream))
    judge.close()
    assert [r.item_id for r in results] == [f"i{i}" for i in range(12)]
    assert finished[-1] == "i0"  # the first item finished last
    assert sorted(finished, key=lambda name: int(str(name)[1:])) == [r.item_id for r in results]


def test_a_resumed_stream_is_answered_from_the_store_chunk_by_chunk(tmp_path: Path) -> None:
    n = LOOKUP_CHUNK + 37  # a full chunk and one that is not
    first = openai_judge(Script(default=GOOD), db=tmp_path / "j.db")
    assert all(r.status == "ok" for r in first.score_many([item(i) for i in range(n)]))
    first.close()
    script = Script()  # any call would fail the test
    again = openai_judge(script, db=tmp_path / "j.db")
    results = asyncio.run(collect(again.ascore_stream(iter(Counted(n)), concurrency=8)))
    again.close()
    assert script.requests == []
    assert [r.item_id for r in results] == [f"i{i}" for i in range(n)]
    assert all(r.cached for r in results)


def test_repeated_items_in_the_window_share_one_call(tmp_path: Path) -> None:
    script = Script(GOOD)
    judge = openai_judge(script, db=tmp_path / "j.db", cache=False)
    results = asyncio.run(collect(judge.ascore_stream([item(1), item(1)], concurrency=2)))
    judge.close()
    assert len(script.requests) == 1
    assert [r.id for r in results] == [results[0].id] * 2


def test_an_authentication_failure_stops_the_stream(tmp_path: Path) -> None:
    script = Script(unauthorized(), default=GOOD)
    judge = openai_judge(script, db=tmp_path / "j.db")
    source = Counted(2_000)

    async def run() -> None:
        async for _ in judge.ascore_stream(iter(source), concurrency=1):
            pass

    with pytest.raises(TransportError):
        asyncio.run(run())
    judge.close()
    assert len(script.requests) == 1  # items waiting for the slot never started
    assert source.closed


def test_progress_needs_a_total_for_items_without_a_length(tmp_path: Path) -> None:
    judge = Judge("reference@1", "mock:judge", db=tmp_path / "j.db")
    with pytest.raises(ValueError, match="total="):
        judge.ascore_stream(iter([item(0)]), progress=lambda d, t, r: None)
    with pytest.raises(ValueError, match="concurrency"):
        judge.ascore_stream([item(0)], concurrency=0)
    judge.close()


# ---------------------------------------------------------------- judgecards score, streamed


def varied(i: int) -> dict[str, Any]:
    return {**item(i), "model_output": "word " * (i % 23) + f"Candidate {i}: Jupiter."}


def score(*args: str | Path) -> Any:
    return run_cli("score", *args)


def test_score_writes_every_result_in_input_order_with_the_same_summary(tmp_path: Path) -> None:
    n = LOOKUP_CHUNK + 150
    data = write_jsonl(tmp_path / "items.jsonl", [varied(i) for i in range(n)])
    out = tmp_path / "out.jsonl"
    done = score("--card", "reference@1", "--model", "mock:judge", data,
                 "--output", out, "--db", tmp_path / "j.db", "--concurrency", "16")  # fmt: skip
    assert done.exit_code == 0, done.output
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [row["item_id"] for row in written] == [f"i{i}" for i in range(n)]
    # The running tally says what the whole list would have said.
    from judgecards.cli._score_run import ScoreTally
    from judgecards.storage import JudgeResult

    results = [JudgeResult.model_validate(row) for row in written]
    whole = ScoreTally.of(results, [varied(i) for i in range(n)])
    summary = whole.summary(0.0, out).split("\n", 2)[2]  # past the timing line
    assert summary in done.output
    assert whole.verbosity() in done.output
    # …and its correlations are those of the (length, score) pairs in input order.
    from judgecards.judging import verbosity_bias_single

    words = [len(varied(i)["model_output"].split()) for i in range(n)]
    corr = verbosity_bias_single(words, [r.scores["correctness"] for r in results])
    line = f"  {'correctness':<16} Spearman {corr.spearman:+.2f} (p={corr.spearman_p:.2g}, n={n})"
    assert line in done.output


def test_every_line_is_checked_before_any_call_without_holding_the_file(tmp_path: Path) -> None:
    rows: list[dict[str, Any] | str] = [item(i) for i in range(1_200)]
    rows.append(item(3))  # a duplicate id far from the first: remembered on disk, not in a dict
    rows.append("{not json")
    data = write_jsonl(tmp_path / "items.jsonl", rows)
    db = tmp_path / "j.db"
    done = score("--card", "reference@1", "--model", "mock:judge", data,
                 "--output", tmp_path / "out.jsonl", "--db", db)  # fmt: skip
    assert done.exit_code == 2
    assert "items.jsonl:1201, field 'id': duplicate id (first on line 4)" in done.output
    assert "items.jsonl:1202: invalid JSON" in done.output
    assert not db.exists()  # nothing opened, nothing judged


def test_a_file_that_cannot_be_read_twice_is_read_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    lines = "".join(json.dumps(varied(i)) + "\n" for i in range(30))
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "judgecards", "score", "--card", "reference@1", "--model",
         "mock:judge", "/dev/stdin", "--output", str(out), "--db", str(tmp_path / "j.db")],
        input=lines, cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = [json.loads(line)["item_id"] for line in out.read_text().splitlines()]
    assert written == [f"i{i}" for i in range(30)]


def test_the_tally_counts_items_a_cost_cap_left_as_neither_ok_nor_errors() -> None:
    from judgecards.cli._score_run import ScoreTally
    from judgecards.storage import JudgeResult

    fields: dict[str, Any] = {"card": "reference@1", "card_hash": "h", "model": "openai:gpt-4o"}
    left = JudgeResult.model_validate({"id": "a", "status": "not_judged", **fields})
    failed = JudgeResult.model_validate(
        {"id": "b", "status": "error", "error_kind": "timeout", **fields}
    )
    tally = ScoreTally.of([left, failed])
    assert (tally.count, tally.ok, dict(tally.error_kinds)) == (2, 0, {"timeout": 1})


# ---------------------------------------------------------------- start-up: what a run imports


def test_a_score_run_imports_neither_pandas_nor_scipy_stats(tmp_path: Path) -> None:
    # Before: sqlite-utils imported pandas and numpy (~0.7 s), the closing estimates check
    # imported numpy with no labels to correct with, and the verbosity line scipy.stats (~1 s);
    # then numpy and scipy.special for its p-values (~0.35 s of CPU), now plain Python.
    import subprocess
    import sys

    data = write_jsonl(tmp_path / "items.jsonl", [varied(i) for i in range(40)])
    script = (
        "import sys\nfrom judgecards.cli import cli\n"
        "try:\n    cli.main(sys.argv[1:], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'scipy') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "score", "--card", "reference@1", "--model", "mock:judge",
         str(data), "--output", str(tmp_path / "o.jsonl"), "--db", str(tmp_path / "j.db")],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "Spearman" in done.stdout, done.stderr  # the verbosity line was computed…
    assert done.stdout.strip().splitlines()[-1] == "[]"  # …with no numerics library


def test_the_verbosity_correlations_are_scipy_stats_own() -> None:
    import numpy as np
    from scipy import stats

    from judgecards.judging import verbosity_bias_single

    rng = np.random.default_rng(7)
    for n in (3, 4, 25, 300):
        lengths = rng.integers(0, 12, n).astype(float)  # ties, as answer lengths have
        scores = rng.integers(1, 6, n).astype(float)
        ours = verbosity_bias_single(lengths.tolist(), scores.tolist())
        pearson, spearman = stats.pearsonr(lengths, scores), stats.spearmanr(lengths, scores)
        expected = (pearson.statistic, pearson.pvalue, spearman.statistic, spearman.pvalue)
        got = (ours.pearson, ours.pearson_p, ours.spearman, ours.spearman_p)
        assert got == pytest.approx(expected, abs=1e-12)


def test_a_library_import_leaves_sqlite_utils_numpy_types_alone() -> None:
    # Only the CLI's own process hides pandas/numpy from sqlite-utils; a program that imports
    # judgecards as a library and then creates tables from numpy values keeps sqlite-utils'
    # numpy column types (they were lost when the store's import hid numpy).
    import subprocess
    import sys

    script = (
        "import judgecards.storage.store, sqlite_utils.db, numpy\n"
        "print(numpy.int64 in sqlite_utils.db.COLUMN_TYPE_MAPPING)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.stdout.strip() == "True", done.stderr
