"""Card bodies are untrusted code: bounded in time and memory, and refused at load with a line.

Issue 9, defect 10: nested ``range`` loops hung, a body built a gigabyte, and sandbox violations
surfaced as long tracebacks at render time instead of card errors at load.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from judgecards.cards import Card, parse_card_file, render
from judgecards.cards.sandbox import RenderLimitExceeded, RenderLimits, compile_body, render_bounded
from judgecards.errors import CardValidationError, RenderError

HEAD = """---
name: hostile
version: 1
description: A card body written by someone else.
inputs:
  question: {description: The question.}
  answer: {description: The answer.}
output:
  format: final_token
  line: "Rating: [[{value}]]"
  min: 1
  max: 10
---
"""
HEAD_LINES = HEAD.count("\n")  # the body's first line is HEAD_LINES + 1
PROLOGUE = "<question>\n{{ question }}\n</question>\n<answer>\n{{ answer }}\n</answer>\n"


def write_card(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "hostile.md.j2"
    path.write_text(HEAD + PROLOGUE + body, "utf-8")
    return path


def body_line(text: str) -> int:
    """The file line of ``text`` in a card written by `write_card`."""
    lines = (PROLOGUE + "").count("\n")
    return HEAD_LINES + lines + 1 + text.count("\n")


# Each body blows a budget or breaks the sandbox whatever the inputs are; the marked line
# (>>) is where the error must point.
HOSTILE = {
    "nested range": "Intro\n{% for i in range(100000) %}\n>>{% for j in range(100000) %}x{% endfor %}\n{% endfor %}\n",
    "repeat a string": "Intro\n>>{{ 'a' * 1000000000 }}\n",
    "pad a string": "Intro\n>>{{ question|center(1000000000) }}\n",
    "pad with a method": "\n>>{{ 'a'.rjust(1000000000) }}\n",
    "format width": "\n>>{{ '{:>1000000000}'.format(1) }}\n",
    "printf width": "\n>>{{ '%1000000000d' % 1 }}\n",
    "double in a loop": "{% set ns = namespace(s='ab') %}\n{% for i in range(64) %}\n>>{% set ns.s = ns.s ~ ns.s %}\n{% endfor %}\n",
    "capture a loop": "{% set x %}\n{% for i in range(100000) %}{% for j in range(3) %}\n>>{{ output_schema }}\n{% endfor %}{% endfor %}\n{% endset %}\n",
    "mapped padding": "\n>>{{ range(100000)|map('center', 100000)|join }}\n",
    "power": "\n>>{{ 7 ** 1000000000 }}\n",
    "endless recursion": "{% macro f(n) %}\n>>{{ f(n) }}\n{% endmacro %}\n{{ f(1) }}\n",
    "format attribute": "\n>>{{ '{0.__class__.__mro__}'.format(question) }}\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_body_is_a_card_error_at_load_with_its_line(tmp_path: Path, name: str) -> None:
    marked = HOSTILE[name]
    before, _, _ = marked.partition(">>")
    path = write_card(tmp_path, marked.replace(">>", ""))
    expected_line = body_line(before)

    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(CardValidationError) as caught:
            parse_card_file(path)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    elapsed = time.perf_counter() - started

    error = caught.value
    assert (error.file, error.line) == (str(path), expected_line), str(error)
    assert "sandbox" in str(error)
    assert elapsed < 10  # two trial renders, each stopped by a budget (2 s at most)
    assert peak < 60_000_000  # bytes: refused before the gigabyte is built


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("{{ question.__class__ }}", "attribute '__class__'"),
        ("{% if answer %}{{ question['__init__'] }}{% endif %}", "attribute '__init__'"),
        ("{{ question.split().append('x') }}", ".append() is refused"),
        ("{% include 'other.j2' %}", "cannot include"),
        ("{% from 'x' import y %}", "cannot include"),
        # Issue 22 item 9: attribute names passed to filters passed the load-time check.
        ("{{ ''|attr('__class__')|attr('__mro__') }}", "attribute '__class__'"),
        ("{{ [question]|map(attribute='__class__')|list }}", "attribute '__class__'"),
        ("{{ [question]|map('attr', '__class__')|list }}", "attribute '__class__'"),
        ("{{ [question]|selectattr('x.__class__')|list }}", "attribute 'x.__class__'"),
        ("{% set n = '__cla' ~ 'ss__' %}{{ question|attr(n) }}", "attr() with a computed name"),
    ],
)
def test_static_refusals_point_at_their_line_in_any_branch(
    tmp_path: Path, body: str, words: str
) -> None:
    path = write_card(tmp_path, "Intro\n\n" + body + "\n")
    with pytest.raises(CardValidationError) as caught:
        parse_card_file(path)
    assert caught.value.line == body_line("Intro\n\n") and words in str(caught.value)


def test_a_violation_in_an_optional_branch_is_found_at_load(tmp_path: Path) -> None:
    text = HEAD.replace(
        "  answer: {description: The answer.}",
        "  answer: {description: The answer., required: false}",
    )
    body = "{{ question }}\n{% if not answer %}\n{{ '{0.__class__}'.format(question) }}\n{% else %}{{ answer }}{% endif %}\n"
    path = tmp_path / "optional.md.j2"
    path.write_text(text + body, "utf-8")
    with pytest.raises(CardValidationError) as caught:
        parse_card_file(path)
    assert caught.value.line == HEAD_LINES + 3


def test_a_loop_over_structured_input_passes_the_trial_render(tmp_path: Path) -> None:
    # Placeholders stand for lists of mappings too: {{ c.name }} inside a loop must not fail.
    body = "{% for c in answer %}- {{ c.name }} ({{ c.low }}-{{ c.high }})\n{% endfor %}\n"
    card = parse_card_file(write_card(tmp_path, body))
    prompt = render(card, {"question": "q", "answer": [{"name": "n", "low": 1, "high": 5}]})
    assert "- n (1-5)" in prompt.user


def data_card(tmp_path: Path, body: str) -> Card:
    return parse_card_file(write_card(tmp_path, body))


def test_a_blowup_that_depends_on_the_data_is_a_render_error_naming_card_and_line(
    tmp_path: Path,
) -> None:
    card = data_card(tmp_path, "\n{{ question * (answer|int) }}\n")
    assert render(card, {"question": "ab", "answer": "3"}).user.count("ababab") == 1

    tracemalloc.start()
    try:
        with pytest.raises(RenderError) as caught:
            render(card, {"question": "ab", "answer": "1000000000"})
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    message = str(caught.value)
    assert message.startswith(
        f"card hostile@1 ({card.path}:{body_line(chr(10))}): rendering stopped"
    )
    assert caught.value.card == "hostile@1"
    assert peak < 60_000_000


def test_a_sandbox_refusal_that_depends_on_the_data_is_a_render_error(tmp_path: Path) -> None:
    card = data_card(tmp_path, "{{ answer[question] }}\n")
    with pytest.raises(RenderError, match="the sandbox refused") as caught:
        render(card, {"question": "__class__", "answer": "x"})
    assert "Traceback" not in str(caught.value) and "hostile@1" in str(caught.value)


def test_other_body_errors_are_render_errors_too(tmp_path: Path) -> None:
    card = data_card(tmp_path, "{{ question + 1 }}\n")
    with pytest.raises(RenderError, match="TypeError") as caught:
        render(card, {"question": "x", "answer": "y"})
    assert f"{card.path}:{body_line('')}" in str(caught.value)


def test_inputs_do_not_count_against_the_bodys_allowance() -> None:
    # The size limit is the card's allowance plus three times the inputs: a long input printed
    # once (or twice, captured and printed) renders.
    template = compile_body("{% set x %}{{ big }}{% endset %}{{ x }}{{ big }}")
    limits = RenderLimits(max_output_chars=100)
    big = "x" * 5000
    assert render_bounded(template, {"big": big}, input_chars=len(big), limits=limits) == big * 2
    with pytest.raises(RenderLimitExceeded, match="emits more than 100 characters"):
        render_bounded(template, {"big": big}, input_chars=0, limits=limits)


def test_step_and_time_budgets() -> None:
    loop = compile_body("{% for i in range(n) %}.{% endfor %}")
    assert render_bounded(loop, {"n": 50}, limits=RenderLimits(max_steps=51)) == "." * 50
    with pytest.raises(RenderLimitExceeded, match="more than 49 loop iterations"):
        render_bounded(loop, {"n": 50}, limits=RenderLimits(max_steps=49))
    with pytest.raises(RenderLimitExceeded, match="took over 0 s"):
        render_bounded(loop, {"n": 50}, limits=RenderLimits(max_seconds=0))


def test_builtin_cards_render_as_before() -> None:
    from judgecards.cards import load_card

    card = load_card("rubric@1")
    prompt = render(card, {"question": "q", "answer": "a", "criteria": [
        {"name": "relevance", "description": "On topic.", "scale_min": 1, "scale_max": 5},
    ]})  # fmt: skip
    assert "- relevance (scale 1 to 5): On topic.\n</criteria>" in prompt.user


def test_an_item_whose_data_breaks_the_card_is_its_own_error_record(tmp_path: Path) -> None:
    from judgecards import Judge

    card = data_card(tmp_path, "\n{{ question * (answer|int) }}\n")
    items = [
        {"id": "fine", "question": "ab", "answer": "3"},
        {"id": "bomb", "question": "ab", "answer": "1000000000"},
        {"id": "also-fine", "question": "cd", "answer": "2"},
    ]
    with Judge(card, "mock:judge", db=tmp_path / "j.db") as judge:
        results = judge.score_many(items, concurrency=2)
    assert [r.status for r in results] == ["ok", "error", "ok"]
    assert results[1].error_kind == "input"
    assert results[1].error is not None and "rendering stopped" in results[1].error
    assert results[1].attempts == 0


def test_an_attr_filter_escape_stops_score_before_a_database_exists(tmp_path: Path) -> None:
    """Issue 22 item 9: the card error names its file and line; nothing is created."""
    from click.testing import CliRunner

    from judgecards.cli import cli

    card = write_card(tmp_path, "Intro\n{{ ''|attr('__class__')|attr('__mro__') }}\n")
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "1", "question": "q", "answer": "a"}\n')
    db = tmp_path / "j.db"
    result = CliRunner().invoke(
        cli,
        ["score", "--card", "hostile", "--cards-dir", str(tmp_path), "--model", "mock:judge",
         str(items),
         "--output", str(tmp_path / "out.jsonl"), "--db", str(db)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    line = body_line("Intro\n")
    assert f"{card}:{line}" in result.output, result.output
    assert "'__class__'" in result.output
    assert not db.exists() and not (tmp_path / "out.jsonl").exists()
