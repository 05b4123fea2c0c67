"""``judgecards compare`` and ``judgecards rank`` end to end: real OpenAI SDK, loopback fake server.

The server answers pairwise prompts by reading the answers between the card's tags; the default
judge (`tests.fakes.server.card_reply`) is position-consistent, and a test swaps in one that
always picks the answer shown first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import run_cli
from tests.fakes.server import FakeServer, card_reply

FIRST_WINS = json.dumps({"reasoning": "The first answer is better.", "winner": "A"})


@pytest.fixture
def env(server: FakeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeServer:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.chdir(tmp_path)
    server.reply = card_reply
    return server


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def outputs(
    tmp_path: Path, n: int = 6, *, extra_a: bool = False, extra_b: bool = False
) -> tuple[Path, Path]:
    a = [
        {
            "id": f"q{i}",
            "question": f"Question {i}?",
            "answer": f"A's answer to {i}",
            "model": "model-x",
        }
        for i in range(n)
    ]
    b = [
        {"id": f"q{i}", "output": f"B's longer answer to question {i}", "model": "model-y"}
        for i in range(n)
    ]
    if extra_a:
        a.append({"id": "only-a", "question": "?", "answer": "a"})
    if extra_b:
        b.insert(0, {"id": "only-b", "question": "?", "answer": "b"})
    return write(tmp_path / "a.jsonl", a), write(tmp_path / "b.jsonl", b)


def compare_args(a: Path, b: Path, *extra: str, model: str = "openai:gpt-4o") -> list[str]:
    return [
        "compare",
        "--model",
        model,
        "--a",
        str(a),
        "--b",
        str(b),
        "--output",
        "out.jsonl",
        "--concurrency",
        "4",
        *extra,
    ]


def test_compare_writes_rows_and_a_report_and_reports_unmatched_ids(
    env: FakeServer, tmp_path: Path
) -> None:
    a, b = outputs(tmp_path, extra_a=True, extra_b=True)
    before = env.requests
    result = run_cli(*compare_args(a, b))
    assert result.exit_code == 0, result.output
    assert env.requests - before == 12  # 6 pairs, both orders
    rows = [json.loads(line) for line in Path("out.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == [f"q{i}" for i in range(6)]
    for row in rows:
        assert row["winner"] in ("A", "B") and row["position_consistent"] is True
        assert (row["model_a"], row["model_b"]) == ("model-x", "model-y")
        assert (
            row["first_order"]["shown_first"] == "A" and row["second_order"]["shown_first"] == "B"
        )
        assert row["first_order"]["raw_reply"] and row["second_order"]["result_id"]
    assert "model-x (A) vs model-y (B): 6 comparisons" in result.stdout
    assert "position consistency" in result.stdout and "1.000" in result.stdout
    assert "longer answer wins" in result.stdout  # verbosity check
    assert "1 id(s) in" in result.stderr and "only-a" in result.stderr and "only-b" in result.stderr
    assert "unmatched: 1 ids only in --a, 1 only in --b" in result.stdout

    # Repeating the comparison is free: every judgment comes from the store.
    again = run_cli(*compare_args(a, b))
    assert again.exit_code == 0 and env.requests - before == 12
    assert "12 of 12 judgments served without a call" in again.stdout


def test_always_first_judge_json_report(env: FakeServer, tmp_path: Path) -> None:
    env.reply = lambda prompt: FIRST_WINS if "<answer_a>" in prompt else card_reply(prompt)
    a, b = outputs(tmp_path, extra_b=True)
    result = run_cli(
        *compare_args(a, b, "--json", "--model-a", "gpt-4o-mini", "--model-b", "llama-3")
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["wins"], report["losses"], report["ties"]) == (0, 0, 6)
    assert report["position_consistency"]["value"] == 0.0
    assert report["first_position_preference"]["value"] == 1.0
    assert report["unmatched"] == {"only_in_a": [], "only_in_b": ["only-b"]}
    assert report["model_a"] == "gpt-4o-mini" and report["errors"] == 0
    assert "gpt-4o-mini" in report["self_preference"]  # judge gpt-4o, same family as A
    assert report["verbosity"] is not None


def test_bad_lines_are_all_reported_and_nothing_is_judged(env: FakeServer, tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [
        {"id": "1", "question": "Q1", "answer": "x"},
        {"question": "Q2", "answer": "no id"},
        {"id": "1", "question": "Q1", "answer": "dup"},
        {"id": "3", "question": "Q3", "answer": 42},
    ])  # fmt: skip
    b = write(tmp_path / "b.jsonl", [{"id": "1", "answer": "y"}])
    before = env.requests
    result = run_cli(*compare_args(a, b))
    assert result.exit_code == 2 and env.requests == before
    assert f"{a}:2, field 'id': missing 'id'" in result.stderr
    assert f"{a}:3, field 'id': duplicate id (first on line 1)" in result.stderr
    assert f"{a}:4, field 'answer': missing answer" in result.stderr


def test_question_must_agree_and_exist(env: FakeServer, tmp_path: Path) -> None:
    a = write(
        tmp_path / "a.jsonl",
        [{"id": "1", "question": "Q1", "answer": "x"}, {"id": "2", "answer": "x"}],
    )
    b = write(
        tmp_path / "b.jsonl",
        [{"id": "1", "question": "Other", "answer": "y"}, {"id": "2", "answer": "y"}],
    )
    result = run_cli(*compare_args(a, b))
    assert result.exit_code == 2
    assert f"{a}:1, field 'question': differs from {b}:1" in result.stderr
    assert f"{a}:2, field 'question': missing in both files" in result.stderr


def test_rank_over_stored_comparisons(env: FakeServer, tmp_path: Path) -> None:
    a, b = outputs(tmp_path, n=8)
    assert run_cli(*compare_args(a, b)).exit_code == 0
    result = run_cli("rank", "--bootstrap", "50")
    assert result.exit_code == 0, result.output
    assert "Bradley–Terry ratings" in result.stdout
    assert "model-x" in result.stdout and "model-y" in result.stdout
    as_json = json.loads(run_cli("rank", "--json", "--method", "elo", "--bootstrap", "0").stdout)
    assert as_json["method"] == "elo" and {m["model"] for m in as_json["models"]} == {
        "model-x",
        "model-y",
    }
    assert sum(m["games"] for m in as_json["models"]) == 16
    missing = run_cli("rank", "--model", "openai:nobody")
    assert missing.exit_code == 2 and "no stored pairwise comparisons" in missing.stderr


def test_rank_after_relabelling_counts_each_pair_once(env: FakeServer, tmp_path: Path) -> None:
    # Before: `rank` exited 2 ("split into 2 groups") and `--method elo` counted 12 games for 6
    # pairs, because the relabelled run stored each pair again under the new labels.
    a, b = outputs(tmp_path, n=6)
    assert run_cli(*compare_args(a, b)).exit_code == 0
    relabel = run_cli(*compare_args(a, b, "--model-a", "new-x", "--model-b", "new-y"))
    assert relabel.exit_code == 0, relabel.output
    result = run_cli("rank", "--bootstrap", "0")
    assert result.exit_code == 0, result.output
    assert "new-x" in result.stdout and "model-x" not in result.stdout
    assert "6 stored comparison(s) were older labels" in result.stdout
    as_json = json.loads(run_cli("rank", "--json", "--method", "elo", "--bootstrap", "0").stdout)
    assert as_json["n_comparisons"] == 6 and as_json["superseded_labellings"] == 6
    assert {m["model"]: m["games"] for m in as_json["models"]} == {"new-x": 6, "new-y": 6}
    older = json.loads(run_cli("rank", "--json", "--models", "model-x,model-y").stdout)
    assert {m["model"] for m in older["models"]} == {"model-x", "model-y"}
    assert older["n_comparisons"] == 6 and older["outside_models"] == 6


def test_rank_refuses_disconnected_groups_and_says_how_to_choose(
    env: FakeServer, tmp_path: Path
) -> None:
    a, b = outputs(tmp_path, n=3)
    assert run_cli(*compare_args(a, b)).exit_code == 0
    other_a = write(
        tmp_path / "c.jsonl",
        [{"id": "z1", "question": "Z?", "answer": "c's answer", "model": "model-c"}],
    )
    other_b = write(
        tmp_path / "d.jsonl", [{"id": "z1", "answer": "d's answer", "model": "model-d"}]
    )
    assert run_cli(*compare_args(other_a, other_b)).exit_code == 0
    refused = run_cli("rank", "--bootstrap", "0", "--method", "elo")
    assert refused.exit_code == 2
    assert "2 groups" in refused.stderr and "--models model-x,model-y" in refused.stderr
    chosen = run_cli("rank", "--bootstrap", "0", "--models", "model-c", "--models", "model-d")
    assert chosen.exit_code == 0 and "model-c" in chosen.stdout


def test_mock_judge_prints_the_banner(env: FakeServer, tmp_path: Path) -> None:
    a, b = outputs(tmp_path, n=2)
    before = env.requests
    result = run_cli(*compare_args(a, b, model="mock:judge"))
    assert result.exit_code == 0 and env.requests == before
    assert "MOCK PROVIDER" in result.stderr
