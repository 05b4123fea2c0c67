"""One CLI vocabulary (issue 19 item 5): the judge model is ``--model`` everywhere, every
``--seed`` says what it seeds, and old spellings keep working for one release with one line on
stderr."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import Result

from judgecards.cli import cli
from judgecards.storage import Store
from tests.builders import run_cli


def commands(
    command: click.Command = cli, path: tuple[str, ...] = (), parent: click.Context | None = None
) -> Iterator[tuple[str, click.Command]]:
    """Every visible command and group, by its full name (`audit sample`)."""
    yield " ".join(path), command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1] if path else "judgecards", parent=parent)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, (*path, name), ctx)


def visible_options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


@pytest.fixture
def empty_db(tmp_path: Path) -> Path:
    path = tmp_path / "empty.db"
    Store(path).close()
    return path


def test_the_judge_model_is_spelled_model_everywhere() -> None:
    judge_spellings = {
        f"{name}: {opt}"
        for name, command in commands()
        for option in visible_options(command)
        for opt in option.opts
        if "judge" in opt
    }
    assert judge_spellings == set()


def test_every_seed_says_what_it_seeds() -> None:
    seeds = {
        name: option.help or ""
        for name, command in commands()
        for option in visible_options(command)
        if "--seed" in option.opts
    }
    assert seeds  # align, audit sample, compare, estimate, rank
    vague = {
        name: text for name, text in seeds.items() if not text.startswith("Seed ") or len(text) < 40
    }
    assert vague == {}


def test_rank_judge_model_still_works_with_one_warning_line(empty_db: Path) -> None:
    new = run_cli("rank", "--model", "openai:nobody", "--db", empty_db)
    old = run_cli("rank", "--judge-model", "openai:nobody", "--db", empty_db)
    assert new.exit_code == old.exit_code == 2
    warning = (
        "Warning: --judge-model is deprecated and will be removed in the next release: "
        "use --model\n"
    )
    assert "openai:nobody" in new.stderr and "Warning" not in new.stderr
    assert old.stderr == warning + new.stderr


def test_rank_refuses_both_spellings_with_different_values(empty_db: Path) -> None:
    both = run_cli("rank", "--model", "a:b", "--judge-model", "c:d", "--db", empty_db)
    assert both.exit_code == 2
    assert "--judge-model is the old spelling of --model: give --model only" in both.stderr


def test_export_no_longer_offers_label_only_options() -> None:
    export = dict(commands())["export"]
    names = {opt for option in visible_options(export) for opt in option.opts}
    assert not names & {"--labeler", "--audit"}
    labels_export = dict(commands())["labels export"]
    names = {opt for option in visible_options(labels_export) for opt in option.opts}
    assert {"--labeler", "--audit", "--since", "--until", "--card", "--model"} <= names


# --------------------------------------------------------------------------- score's options

ITEMS = [
    {"id": f"q{k}", "question": f"2 + {k}?", "gold_answer": str(2 + k), "model_output": str(2 + k)}
    for k in range(3)
]


def option_names(command: click.Command) -> set[str]:
    return {opt for option in visible_options(command) for opt in option.opts}


def test_score_has_at_most_20_options_and_one_mode() -> None:
    score = dict(commands())["score"]
    assert len(visible_options(score)) <= 20
    # Cascade and batch submission are commands of their own, the CI outputs one option.
    assert not option_names(score) & {"--guarantee", "--cascade", "--batch", "--junit", "--input"}
    assert {"cascade", "batch submit"} <= dict(commands()).keys()


def test_compare_has_one_mode_and_no_hand_written_exclusion() -> None:
    """Pairs go down a cascade with ``cascade A B`` and into a batch with ``batch submit A B``;
    ``compare`` keeps the live run and its ``--plan`` (23 options, was 26)."""
    by_name = dict(commands())
    compare = by_name["compare"]
    assert len(visible_options(compare)) <= 23
    assert not option_names(compare) & {"--guarantee", "--delta", "--cascade", "--batch"}
    # score's 20 less --plan and --max-cost, plus --guarantee, --delta and --json
    assert len(visible_options(by_name["cascade"])) <= 21
    for name in ("cascade", "batch submit"):
        (argument,) = [p for p in by_name[name].params if isinstance(p, click.Argument)]
        assert argument.metavar == "ITEMS | A B", name


def test_the_shared_groups_are_spelled_the_same_in_every_command_that_takes_them() -> None:
    by_name = dict(commands())
    judging = ["score", "cascade", "compare", "batch submit"]
    for name in judging:
        assert {"--base-url", "--timeout", "--set", "--max-input-chars"} <= option_names(
            by_name[name]
        ), name
    for name in ["score", "cascade", "compare", "eval", "audit report"]:
        assert "--ci" in option_names(by_name[name]), name
    everywhere = {opt for _, command in commands() for opt in option_names(command)}
    assert not everywhere & {
        "--junit", "--summary-md", "--output-mode", "--max-tokens", "--top-logprobs",
        "--threshold", "--weight", "--primary", "--criteria", "--cascade", "--a", "--b", "--input",
    }  # fmt: skip


@pytest.fixture
def items(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    return path


def score_run(tmp_path: Path, name: str, *args: object) -> tuple[Result, str]:
    """A mock score run writing ``name``.jsonl, and what it wrote."""
    output = tmp_path / f"{name}.jsonl"
    result = run_cli(
        "score", "--card", "reference@1", "--model", "mock:judge", "--output", output,
        "--db", tmp_path / f"{name}.db", *args,
    )  # fmt: skip
    return result, output.read_text() if output.exists() else ""


def verdicts(written: str) -> list[tuple[object, ...]]:
    rows = [json.loads(line) for line in written.splitlines()]
    return [(r["item_id"], r["verdict"], r["scores"], r["status"]) for r in rows]


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "is deprecated" in line]


@pytest.mark.parametrize(
    ("old", "new", "warning"),
    [
        (["--input", "{items}"], ["{items}"], "--input ITEMS is deprecated"),
        (
            ["{items}", "--output-mode", "prompt"],
            ["{items}", "--set", "output_mode=prompt"],
            "--output-mode is deprecated",
        ),
        (
            ["{items}", "--max-tokens", "300"],
            ["{items}", "--set", "max_tokens=300"],
            "--max-tokens is deprecated",
        ),
        (
            ["{items}", "--top-logprobs", "0"],
            ["{items}", "--set", "top_logprobs=0"],
            "--top-logprobs is deprecated",
        ),
        (
            ["{items}", "--junit", "{tmp}/old.xml"],
            ["{items}", "--ci", "junit={tmp}/new.xml"],
            "--junit is deprecated",
        ),
    ],
    ids=["input", "output-mode", "max-tokens", "top-logprobs", "junit"],
)
def test_score_old_spellings_still_work_with_one_warning_line(
    tmp_path: Path, items: Path, old: list[str], new: list[str], warning: str
) -> None:
    def filled(args: list[str]) -> list[str]:
        return [a.format(items=items, tmp=tmp_path) for a in args]

    fresh, wrote_new = score_run(tmp_path, "new", *filled(new))
    again, wrote_old = score_run(tmp_path, "old", *filled(old))
    assert fresh.exit_code == again.exit_code == 0, again.output
    assert verdicts(wrote_old) == verdicts(wrote_new) and len(verdicts(wrote_new)) == 3
    assert warnings_in(fresh.stderr) == []
    (line,) = warnings_in(again.stderr)
    assert line.startswith(f"Warning: {warning} and will be removed in the next release: use ")
    if "--junit" in old:
        assert (tmp_path / "old.xml").read_text().count("<testcase") == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{items}", "--input", "{items}"], "--input is the old spelling of the ITEMS argument"),
        ([], "Missing argument 'ITEMS'"),
        (["{items}", "--set", "max_tokens=0"], "max_tokens: 0 is not in the range x>=1"),
        (["{items}", "--set", "temperature=1"], "NAME one of output_mode, max_tokens"),
        (["{items}", "--ci", "junit"], "'junit': write it as junit=FILE"),
        (["{items}", "--model", "mock:other"], "score judges with one --model; to judge down"),
        (["{items}", "--ci", "xml=out.xml"], "give junit=FILE, summary=FILE or github"),
        (
            ["{items}", "--ci", "junit={tmp}/a.xml", "--junit", "{tmp}/b.xml"],
            "--junit is the old spelling of --ci junit=FILE",
        ),
        (
            ["{items}", "--set", "max_tokens=5", "--max-tokens", "6"],
            "--max-tokens is the old spelling of --set max_tokens",
        ),
    ],
)
def test_bad_or_doubled_spellings_exit_2_before_anything_runs(
    tmp_path: Path, items: Path, args: list[str], message: str
) -> None:
    result, wrote = score_run(tmp_path, "out", *[a.format(items=items, tmp=tmp_path) for a in args])
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert wrote == "" and not (tmp_path / "out.db").exists()


def test_old_score_batch_is_batch_submit(tmp_path: Path, items: Path) -> None:
    # A mock model has no batch API: both spellings stop at the same error, the old one warned.
    new = run_cli("batch", "submit", items, "--card", "reference@1", "--model", "mock:judge",
              "--db", tmp_path / "v.db")  # fmt: skip
    old, _ = score_run(tmp_path, "out", items, "--batch")
    assert new.exit_code == old.exit_code == 2 and "has none" in new.stderr
    assert old.stderr == (
        "Warning: score --batch is deprecated and will be removed in the next release: use "
        "judgecards batch submit ITEMS\n" + new.stderr
    )


def test_old_score_guarantee_is_the_cascade_command(tmp_path: Path, items: Path) -> None:
    # Without labels both stop before any call, naming what to label.
    new = run_cli("cascade", items, "--card", "reference@1", "--model", "mock:judge",
              "--model", "mock:other", "--guarantee", "0.85", "--output", tmp_path / "o.jsonl",
              "--db", tmp_path / "v.db")  # fmt: skip
    old = run_cli("score", items, "--card", "reference@1", "--guarantee", "0.85",
              "--cascade", "mock:judge,mock:other", "--output", tmp_path / "o.jsonl",
              "--db", tmp_path / "v.db")  # fmt: skip
    assert new.exit_code == old.exit_code == 2
    assert "the cascade needs at least" in new.stderr
    assert warnings_in(old.stderr) == [
        "Warning: score --guarantee is deprecated and will be removed in the next release: use "
        "judgecards cascade ITEMS --guarantee T",
        "Warning: --cascade M1,M2 is deprecated and will be removed in the next release: use "
        "--model M1 --model M2",
    ]
    assert new.stderr.splitlines()[-1] == old.stderr.splitlines()[-1]


def test_several_models_without_a_guarantee_exit_2(tmp_path: Path, items: Path) -> None:
    result = run_cli("compare", items, items, "--model", "mock:a", "--model", "mock:b",
                 "--output", tmp_path / "o.jsonl", "--db", tmp_path / "v.db")  # fmt: skip
    assert result.exit_code == 2
    assert "compare judges with one --model; to judge down several" in result.stderr
    assert "judgecards cascade A B --card pairwise" in result.stderr


# --------------------------------------------------------------------------- --rubric FILE

RUBRIC_ITEM = {
    "id": "au",
    "question": "Capital of Australia?",
    "answer": "Canberra.",
    "context": "Canberra became Australia's capital in 1913.",
}


def rubric_run(tmp_path: Path, *args: object) -> tuple[Result, list[dict[str, object]]]:
    items = tmp_path / "answers.jsonl"
    items.write_text(json.dumps(RUBRIC_ITEM) + "\n")
    output = tmp_path / "rubric.jsonl"
    result = run_cli("score", items, "--card", "rubric", "--model", "mock:judge", "--output", output,
                 "--db", tmp_path / "r.db", *args)  # fmt: skip
    rows = [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    return result, rows


def test_rubric_file_is_the_four_old_options(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text(
        "thresholds: {faithfulness: 4, relevance: 3}\n"
        "weights: {faithfulness: 2, relevance: 1}\n"
        "primary: relevance\n"
    )
    new, rows_new = rubric_run(tmp_path, "--rubric", policy)
    old, rows_old = rubric_run(
        tmp_path, "--threshold", "faithfulness=4", "--threshold", "relevance=3",
        "--weight", "faithfulness=2", "--weight", "relevance=1", "--primary", "relevance",
    )  # fmt: skip
    assert new.exit_code == old.exit_code == 0, new.output
    (row,) = rows_new
    assert row["verdict"] in ("pass", "fail") and "aggregate" in row["scores"]  # type: ignore[operator]
    assert [(r["verdict"], r["scores"]) for r in rows_old] == [(row["verdict"], row["scores"])]
    assert len(warnings_in(old.stderr)) == 3 and warnings_in(new.stderr) == []


def test_a_bad_rubric_file_names_file_line_and_key(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("primary: relevance\nthreshold: {relevance: 3}\n")
    result, rows = rubric_run(tmp_path, "--rubric", policy)
    assert result.exit_code == 2 and rows == []
    assert f"{policy}:2" in result.stderr and "threshold" in result.stderr
    assert "unknown key" in result.stderr
    policy.write_text("primary: relevance\nthresholds:\n  nonsense: 3\n")
    result, _ = rubric_run(tmp_path, "--rubric", policy)
    assert result.exit_code == 2 and f"{policy}:2" in result.stderr
    assert "unknown criteria nonsense" in result.stderr and "thresholds" in result.stderr
    assert not (tmp_path / "r.db").exists()
