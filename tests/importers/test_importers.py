"""`judgecards import`: OpenAI Evals graders and promptfoo configs become cards and eval configs
that load, run end to end on the mock provider, and judge the way the source did; what cannot be
translated is listed and makes the command exit 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judgecards import Judge, compare_many
from judgecards.cards import parse_card_file, render
from judgecards.cli import cli
from judgecards.errors import InputError, OutputError
from judgecards.importers import import_openai_graders, import_promptfoo
from judgecards.storage import Store
from judgecards.tiered.config import build_pipeline, load_config
from judgecards.tiered.report import TieredReport
from tests.builders import FIXTURES

FIXTURES = FIXTURES / "importers"
OPENAI = FIXTURES / "openai_testing_criteria.json"
PROMPTFOO = FIXTURES / "promptfooconfig.yaml"


def run_config(config: Path, items: list[dict[str, Any]], db: Path) -> TieredReport:
    """Load a generated config with the tiered loader and run it on the mock provider."""
    loaded, source = load_config(config)
    has_judge = any(tier.judge is not None for tier in loaded.tiers)
    with Store(db) as store:
        pipeline = build_pipeline(
            loaded, source, db=store, model="mock:judge" if has_judge else None
        )
        return pipeline.run(items)


def write(path: Path, text: str) -> Path:
    path.write_text(text, "utf-8")
    return path


# --------------------------------------------------------------------------- OpenAI graders


def test_openai_graders_load_run_and_list_what_is_left_out(tmp_path: Path) -> None:
    result = import_openai_graders(OPENAI, tmp_path / "out")
    names = sorted(path.name for path in result.configs)
    assert names == ["correctness.yaml", "overlap.yaml", "says-thanks.yaml", "sentiment.yaml"]
    for card in result.cards:
        parse_card_file(card)  # raises on any card error
    left_out = {(gap.where, gap.what.split(" ")[0]) for gap in result.left_out}
    assert left_out == {
        ("grader 'exact-answer' (string_check)", "reference"),
        ("grader 'fuzzy' (text_similarity)", "evaluation_metric"),
    }
    notes = result.notes.read_text("utf-8")
    assert "exact-answer" in notes and "fuzzy_match" in notes and "sampling_params.seed" in notes

    items = [
        {"id": f"i{n}", "question": "Return policy?", "reference_answer": "Thank you: 30 days.",
         "model_output": text}
        for n, text in enumerate(["Thank you! 30 days.", "We never close.", "thank YOU, 30 days"])
    ]  # fmt: skip
    report = run_config(result.output / "sentiment.yaml", items, tmp_path / "db")
    for outcome in report.items:  # label_model: the verdict is the label; passing_labels pass
        assert outcome.judge is not None and outcome.judge.status == "ok"
        assert outcome.judge.verdict in ("positive", "neutral", "negative")
        assert (outcome.outcome == "pass") == (outcome.judge.verdict in ("positive", "neutral"))
    report = run_config(result.output / "correctness.yaml", items, tmp_path / "db")
    for outcome in report.items:  # score_model: pass_threshold 5 on the range [1, 7]
        assert outcome.judge is not None
        score = outcome.judge.scores["result"]
        assert 1 <= score <= 7
        assert (outcome.outcome == "pass") == (score >= 5)
    report = run_config(result.output / "says-thanks.yaml", items, tmp_path / "db")
    assert [o.outcome for o in report.items] == ["pass", "fail", "pass"]  # ilike: any case
    report = run_config(result.output / "overlap.yaml", items, tmp_path / "db")
    assert [o.outcome for o in report.items] == ["pass", "fail", "pass"]


@pytest.mark.parametrize(
    ("operation", "expected"),
    [("eq", ["pass", "fail", "fail"]), ("ne", ["fail", "pass", "pass"]),
     ("like", ["pass", "fail", "pass"]), ("ilike", ["pass", "pass", "pass"])],
)  # fmt: skip
def test_string_check_operations(tmp_path: Path, operation: str, expected: list[str]) -> None:
    """The reference is text, not a pattern: 'a.b*' matches only itself."""
    grader = {"type": "string_check", "name": "check", "input": "{{ sample.output_text }}",
              "reference": "a.b*", "operation": operation}  # fmt: skip
    result = import_openai_graders(write(tmp_path / "g.json", json.dumps(grader)), tmp_path / "o")
    assert result.left_out == ()
    items = [
        {"id": str(n), "model_output": text} for n, text in enumerate(["a.b*", "A.B*", "xa.b*y"])
    ]
    report = run_config(result.output / "check.yaml", items, tmp_path / "db")
    assert [o.outcome for o in report.items] == expected


def test_multi_imports_each_grader_and_lists_the_formula(tmp_path: Path) -> None:
    grader = {
        "type": "multi", "name": "combined", "calculate_output": "0.5 * a + 0.5 * b",
        "graders": {
            "a": {"type": "text_similarity", "name": "a", "input": "{{sample.output_text}}",
                  "reference": "{{item.answer}}", "evaluation_metric": "rouge_1", "pass_threshold": 0.5},
            "b": {"type": "string_check", "name": "b", "input": "{{sample.output_text}}",
                  "reference": "yes", "operation": "like"},
        },
    }  # fmt: skip
    result = import_openai_graders(write(tmp_path / "g.yaml", json.dumps(grader)), tmp_path / "o")
    assert sorted(p.name for p in result.configs) == ["combined-a.yaml", "combined-b.yaml"]
    assert [gap.what for gap in result.left_out] == ["calculate_output '0.5 * a + 0.5 * b'"]


def test_a_tab_indented_json_file_is_read(tmp_path: Path) -> None:
    grader = {"type": "string_check", "name": "tabs", "input": "{{ sample.output_text }}",
              "reference": "x", "operation": "eq"}  # fmt: skip
    source = write(tmp_path / "g.json", json.dumps(grader, indent="\t"))
    assert "\n\t" in source.read_text()
    result = import_openai_graders(source, tmp_path / "o")
    assert [p.name for p in result.configs] == ["tabs.yaml"]


def test_a_system_line_reading_dashes_does_not_end_the_front_matter(tmp_path: Path) -> None:
    grader = {"type": "label_model", "name": "Tone", "model": "gpt-4o",
              "input": [{"role": "system", "content": "Rules:\n---\nBe fair."},
                        {"role": "user", "content": "{{sample.output_text}}"}],
              "labels": ["good", "bad"], "passing_labels": ["good"]}  # fmt: skip
    result = import_openai_graders(write(tmp_path / "g.json", json.dumps(grader)), tmp_path / "o")
    card = parse_card_file(result.cards[0])
    assert card.spec.system == "Rules:\n---\nBe fair."


def test_bad_grader_is_located_and_nothing_is_written(tmp_path: Path) -> None:
    source = write(
        tmp_path / "g.yaml",
        "testing_criteria:\n  - type: label_model\n    name: x\n    input: []\n"
        "    labels: [a, b]\n    passing_labels: [c]\n",
    )
    with pytest.raises(InputError) as caught:
        import_openai_graders(source, tmp_path / "out")
    assert caught.value.line == 6 and caught.value.field == "testing_criteria.0.passing_labels"
    assert not (tmp_path / "out").exists()
    run = CliRunner().invoke(
        cli, ["import", "openai-graders", str(source), "-o", str(tmp_path / "out")]
    )
    assert run.exit_code == 2 and "g.yaml:6" in run.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]  # no scratch directory left


def test_an_existing_directory_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    keep = write(tmp_path / "out" / "mine.yaml", "precious")
    with pytest.raises(OutputError):
        import_openai_graders(OPENAI, tmp_path / "out")
    assert keep.read_text("utf-8") == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# --------------------------------------------------------------------------- promptfoo


def test_promptfoo_config_runs_end_to_end(tmp_path: Path) -> None:
    result = import_promptfoo(PROMPTFOO, tmp_path / "out")
    assert [gap.what for gap in result.left_out] == ["assertion 'javascript'"]
    for card in result.cards:
        parse_card_file(card)
    rows = [
        json.loads(line)
        for line in (result.output / "promptfoo_items.jsonl").read_text().splitlines()
    ]
    assert rows == [{"id": "refund-policy", "question": "How long do I have to return an item?",
                     "policy": "Items can be returned within 30 days with a receipt."}]  # fmt: skip
    items = [
        {**rows[0], "id": "good", "model_output": "You have 30 days with a receipt."},
        {**rows[0], "id": "ai", "model_output": "As an AI language model, 30 days."},
        {**rows[0], "id": "vague", "model_output": "A month or so."},
    ]
    report = run_config(result.output / "promptfoo.yaml", items, tmp_path / "db")
    by_id = {o.id: o for o in report.items}
    assert by_id["ai"].outcome == "fail" and by_id["ai"].tier == "assertions"
    assert by_id["vague"].outcome == "fail" and by_id["vague"].tier == "assertions"
    judged = by_id["good"].judge
    assert judged is not None and judged.status == "ok"
    scores = judged.scores  # every criterion passes, and c3 (threshold 0.8) reaches its score
    passes = all(scores[f"c{n}_pass"] == 1 for n in (1, 2, 3)) and scores["c3_score"] >= 0.8
    assert (by_id["good"].outcome == "pass") == passes

    greeting = json.loads((result.output / "promptfoo-3_items.jsonl").read_text())
    assert greeting["expected_3"] == "Hello, how can I help you today?"  # rouge-n's reference
    items = [{**greeting, "id": "exact", "model_output": "Hello! How can I help you today?"},
             {**greeting, "id": "close", "model_output": "Hello, how can I help you today?"}]  # fmt: skip
    report = run_config(result.output / "promptfoo-3.yaml", items, tmp_path / "db")
    assert report.items[1].outcome == "fail"  # equals is the whole output, exactly
    assert report.items[0].tier == "judge"


def test_rubric_text_is_data_and_output_maps_to_the_card_input(tmp_path: Path) -> None:
    result = import_promptfoo(PROMPTFOO, tmp_path / "out")
    card = parse_card_file(result.output / "cards" / "promptfoo" / "v1.md.j2")
    prompt = render(card, {"model_output": "OUT", "policy": "POLICY"}).user
    assert 'Quotes the policy "POLICY" accurately; the output (OUT) must not invent fees.' in prompt
    assert 'Format hints like {"json": true} are text.' in prompt


def test_template_code_in_a_rubric_is_never_run(tmp_path: Path) -> None:
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "tests:\n  - vars: {q: hi}\n    assert:\n      - type: llm-rubric\n"
        "        value: \"{{ ''.__class__ }} {% for x in range(10**9) %}x{% endfor %} {{ q }}\"\n",
    )
    result = import_promptfoo(config, tmp_path / "out")
    card = parse_card_file(result.cards[0])
    prompt = render(card, {"model_output": "o", "q": "Q"}).user
    assert "{{ ''.__class__ }} {% for x in range(10**9) %}x{% endfor %} Q" in prompt
    assert [gap.what for gap in result.left_out] == [
        "placeholder {{ ''.__class__ }}",
        "a Nunjucks block",
    ]


def test_promptfoo_cli_exit_status(tmp_path: Path) -> None:
    clean = write(
        tmp_path / "clean.yaml",
        "tests:\n  - vars: {}\n    assert:\n      - {type: icontains, value: hello}\n"
        "      - {type: rouge-n, value: hello there, threshold: 0.5}\n",
    )
    run = CliRunner().invoke(cli, ["import", "promptfoo", str(clean), "-o", str(tmp_path / "a")])
    assert run.exit_code == 0, run.output
    assert "approximated" in run.output  # rouge-n is read as ROUGE-1
    run = CliRunner().invoke(
        cli, ["import", "promptfoo", str(PROMPTFOO), "-o", str(tmp_path / "b")]
    )
    assert run.exit_code == 1
    assert (
        "1 part(s) not translated" in run.output and (tmp_path / "b" / "IMPORT_NOTES.md").is_file()
    )


def test_promptfoo_bad_assertion_is_located(tmp_path: Path) -> None:
    config = write(
        tmp_path / "p.yaml", "tests:\n  - assert:\n      - type: contains\n        value: [1]\n"
    )
    with pytest.raises(InputError) as caught:
        import_promptfoo(config, tmp_path / "out")
    assert caught.value.line == 4 and caught.value.field == "tests.0.assert.0.value"
    assert not (tmp_path / "out").exists()


def test_promptfoo_file_values_are_listed_and_ids_stay_unique(tmp_path: Path) -> None:
    config = write(
        tmp_path / "p.yaml",
        "tests:\n  - vars: {id: same}\n    assert: [{type: contains, value: a}]\n"
        "  - vars: {id: same}\n    assert: [{type: contains, value: a}]\n"
        "  - assert: [{type: llm-rubric, value: 'file://rubric.txt'}]\n",
    )
    result = import_promptfoo(config, tmp_path / "out")
    assert [gap.what for gap in result.left_out] == ["value 'file://rubric.txt'"]
    rows = (result.output / "promptfoo_items.jsonl").read_text().splitlines()
    assert [json.loads(row)["id"] for row in rows] == ["test-1", "test-2"]


def test_select_best_becomes_a_pairwise_card_that_compare_runs(tmp_path: Path) -> None:
    result = import_promptfoo(PROMPTFOO, tmp_path / "out")
    card = parse_card_file(result.output / "cards" / "select-best-1" / "v1.md.j2")
    prompt = render(card, {"question": "q", "answer_a": "a", "answer_b": "b"}).user
    assert "choose the friendliest greeting" in prompt
    assert any(gap.what == "select-best" and not gap.left_out for gap in result.gaps)
    cards = result.output / "cards"
    with Judge("select-best-1", "mock:judge", cards_dir=cards, db=tmp_path / "db") as judge:
        pairs = [{"id": "p1", "question": "Say hello.", "answer_a": "Hi!", "answer_b": "Go away."}]
        (comparison,) = compare_many(judge, pairs)
    assert comparison.status == "ok" and comparison.winner in ("A", "B", "tie")


def test_list_vars_expand_like_promptfoo_and_are_bounded(tmp_path: Path) -> None:
    config = write(
        tmp_path / "p.yaml",
        "tests:\n  - description: Greet\n    vars: {language: [French, German], tone: [warm, dry]}\n"
        "    assert: [{type: contains, value: a}]\n",
    )
    result = import_promptfoo(config, tmp_path / "out")
    rows = [
        json.loads(r) for r in (result.output / "promptfoo_items.jsonl").read_text().splitlines()
    ]
    assert [(r["id"], r["language"], r["tone"]) for r in rows] == [
        ("greet-1", "French", "warm"), ("greet-2", "French", "dry"),
        ("greet-3", "German", "warm"), ("greet-4", "German", "dry"),
    ]  # fmt: skip
    values = ", ".join(str(n) for n in range(101))
    bomb = write(
        tmp_path / "bomb.yaml",
        f"tests:\n  - vars: {{a: [{values}], b: [{values}]}}\n    assert: [{{type: contains, value: a}}]\n",
    )
    with pytest.raises(InputError) as caught:
        import_promptfoo(bomb, tmp_path / "out2")
    assert caught.value.field == "tests.0.vars" and caught.value.line == 2


def test_names_jinja_reserves_become_prefixed_inputs(tmp_path: Path) -> None:
    config = write(
        tmp_path / "p.yaml",
        "tests:\n  - vars: {'true': yes-var, loop: L, output_schema: S}\n    assert:\n"
        "      - {type: llm-rubric, value: '{{ true }} {{loop}} {{ output_schema }} {{ output }}'}\n",
    )
    result = import_promptfoo(config, tmp_path / "out")
    card = parse_card_file(result.cards[0])
    assert {"var_true", "var_loop", "var_output_schema"} <= set(card.spec.inputs)
    items = [{"id": "1", "true": "T", "loop": "L", "output_schema": "S", "model_output": "O"}]
    report = run_config(result.configs[0], items, tmp_path / "db")
    assert report.items[0].judge is not None and report.items[0].judge.status == "ok"
    prompt = render(
        card, {"var_true": "T", "var_loop": "L", "var_output_schema": "S", "model_output": "O"}
    )
    assert "T L S O" in prompt.user


def test_a_grader_with_an_image_is_listed_not_fatal(tmp_path: Path) -> None:
    graders = [
        {"type": "label_model", "name": "pic", "model": "gpt-4o", "labels": ["y", "n"],
         "passing_labels": ["y"], "input": [{"role": "user", "content": [
             {"type": "input_text", "text": "Is this right?"},
             {"type": "input_image", "image_url": "{{ item.image }}"}]}]},
        {"type": "string_check", "name": "ok", "input": "{{ sample.output_text }}",
         "reference": "ok", "operation": "eq"},
    ]  # fmt: skip
    result = import_openai_graders(write(tmp_path / "g.json", json.dumps(graders)), tmp_path / "o")
    assert [p.name for p in result.configs] == ["ok.yaml"] and result.cards == ()
    assert [gap.where for gap in result.left_out] == ["grader 'pic' (label_model)"]
