"""The pytest plugin, offline replay and the assertion helpers.

Offline replay and the assertions are checked on the real OpenAI SDK over a scripted transport;
the plugin itself by running inner test suites with pytester, in a subprocess so that the
entry point, the options and pytest-xdist behave as they do for a user.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judgecards import ComparisonResult, Judge, JudgeResult, NotRecorded, compare_many
from judgecards.errors import ProviderConfigError
from judgecards.testing import assert_judgment, assert_prefers
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge

pytest_plugins = ["pytester"]

ITEM = {"question": "What is the capital of France?", "gold_answer": "Paris"}


def _pairwise_reply(winner: str, reasoning: str) -> str:
    return f'{{"reasoning": "{reasoning}", "winner": "{winner}"}}'


# ---------------------------------------------------------------- offline replay (core)


def test_an_offline_judge_replays_an_online_recording_without_a_key(tmp_path: Path) -> None:
    db = tmp_path / "recorded.db"
    script = Script(openai_chat(reference_judgment(5, 5, verdict="match")))
    with openai_judge(script, db=db) as online:
        recorded = online.score(model_output="Paris.", **ITEM)
    assert len(script.requests) == 1

    # No OPENAI_API_KEY in the environment (conftest removes it): an online judge could not
    # even be built; an offline one needs none.
    with pytest.raises(ProviderConfigError):
        Judge("reference@1", "openai:gpt-4o", db=db)
    with Judge("reference@1", "openai:gpt-4o", db=db, offline=True) as offline:
        replayed = offline.score(model_output="Paris.", **ITEM)
        assert offline.transport_counters.requests == 0
    assert (replayed.verdict, replayed.scores, replayed.cached) == (
        recorded.verdict,
        recorded.scores,
        True,
    )


def test_an_offline_judge_answers_from_cached_replies_when_the_result_is_not_stored(
    tmp_path: Path,
) -> None:
    # An item id changes the result key, not the request: the reply is replayed from the cache.
    db = tmp_path / "recorded.db"
    script = Script(openai_chat(reference_judgment(4, 4, verdict="partial_match")))
    with openai_judge(script, db=db, max_attempts=1) as online:
        online.score(model_output="Paris, I think.", **ITEM)
    with Judge("reference@1", "openai:gpt-4o", db=db, offline=True, max_attempts=1) as offline:
        items = [{"id": "q1", "model_output": "Paris, I think.", **ITEM}]
        (result,) = offline.score_many(items)
    assert result.ok and result.cached and result.verdict == "partial_match"


def test_an_unrecorded_item_fails_offline_naming_it_and_how_to_record_it(tmp_path: Path) -> None:
    db = tmp_path / "recorded.db"
    with Judge("reference@1", "openai:gpt-4o", db=db, offline=True) as offline:
        with pytest.raises(NotRecorded) as raised:
            offline.score(model_output="Lyon", **ITEM)
        message = str(raised.value)
        assert "reference@1 with openai:gpt-4o" in message
        assert "question='What is the capital of France?'" in message
        assert "--judge-offline" in message and "API key" in message

        with pytest.raises(NotRecorded, match="for item 'q7'") as raised:
            offline.score_many([{"id": "q7", "model_output": "Lyon", **ITEM}])
        assert raised.value.item_id == "q7"
        # Nothing was written: the next online run judges the item as new.
        assert list(offline.store.results()) == []


def test_an_error_record_is_not_replayed_offline(tmp_path: Path) -> None:
    # Failed items are tried afresh online; offline, that is a call, so it is refused.
    db = tmp_path / "recorded.db"
    with openai_judge(Script(openai_chat("not json")), db=db, max_attempts=1) as online:
        assert not online.score(model_output="Paris", **ITEM).ok
    with Judge("reference@1", "openai:gpt-4o", db=db, offline=True, max_attempts=1) as offline:
        with pytest.raises(NotRecorded):
            offline.score(model_output="Paris", **ITEM)


def test_an_offline_judge_still_rejects_an_unknown_provider() -> None:
    with pytest.raises(ProviderConfigError, match="Unknown provider 'nope'"):
        Judge("reference@1", "nope:model", offline=True)


# ---------------------------------------------------------------- assertion helpers


def _scored(reply: str, answer: str = "Lyon") -> JudgeResult:
    with openai_judge(Script(openai_chat(reply)), max_attempts=1) as judge:
        return judge.score(model_output=answer, **ITEM)


def test_assert_judgment_passes_on_the_verdict_and_scores_asked_for() -> None:
    result = _scored(reference_judgment(5, 4, verdict="match"))
    assert_judgment(result, verdict="match", min_scores={"correctness": 5, "completeness": 4})
    assert_judgment(result, verdict=["match", "partial_match"])


def test_assert_judgment_failure_shows_the_judges_own_account() -> None:
    reply = reference_judgment(
        2, 3, verdict="mismatch", delta="Names Lyon, not Paris.", decision_basis="Wrong city."
    )
    result = _scored(reply)
    with pytest.raises(AssertionError) as raised:
        assert_judgment(result, verdict="match", min_scores={"correctness": 4})
    message = str(raised.value)
    assert "verdict 'mismatch', expected 'match'" in message
    assert "correctness 2 < 4" in message
    assert "scores: correctness=2, completeness=3, style_fidelity=5" in message
    assert "delta: Names Lyon, not Paris." in message
    assert "decision_basis: Wrong city." in message
    assert f"result id: {result.id}" in message


def test_assert_judgment_fails_on_a_missing_axis_and_on_an_error_record() -> None:
    result = _scored(reference_judgment(5, 5, verdict="match"))
    with pytest.raises(AssertionError, match="no 'accuracy' score"):
        assert_judgment(result, min_scores={"accuracy": 1})
    failed = _scored("I refuse to answer in JSON.", answer="Marseille")
    with pytest.raises(AssertionError, match=r"the judgment failed \(invalid_output\)"):
        assert_judgment(failed)


def _comparison(first: str, second: str) -> ComparisonResult:
    script = Script(
        openai_chat(_pairwise_reply(first, "The first answer names the right city.")),
        openai_chat(_pairwise_reply(second, "Position decided it.")),
    )
    pair = {"question": "Capital of France?", "answer_a": "Paris", "answer_b": "Lyon"}
    with openai_judge(script, "pairwise@1", max_attempts=1) as judge:
        # One call at a time, so the script answers the first order first.
        (comparison,) = compare_many(judge, [pair], concurrency=1, model_a="small", model_b="large")
    return comparison


def test_assert_prefers_accepts_a_side_or_a_model_label() -> None:
    comparison = _comparison("A", "B")  # A first, then B first: the judge preferred A both times
    assert comparison.winner == "A"
    assert_prefers(comparison, "A")
    assert_prefers(comparison, "small")
    with pytest.raises(ValueError, match="model labels: 'small', 'large'"):
        assert_prefers(comparison, "medium")


def test_assert_prefers_failure_shows_both_orders() -> None:
    comparison = _comparison("A", "A")  # position bias: a tie
    with pytest.raises(AssertionError) as raised:
        assert_prefers(comparison, "large")
    message = str(raised.value)
    assert "winner 'tie', expected 'B' (large)" in message
    assert "position consistent: False" in message
    assert "first order (A shown first): verdict 'A'" in message
    assert "second order (B shown first): verdict 'B'" in message
    assert "reasoning: The first answer names the right city." in message
    assert comparison.first_order.result_id in message
    assert f"comparison id: {comparison.id}" in message


# ---------------------------------------------------------------- the plugin, from outside

INNER_SUITE = """
import pytest
from judgecards.testing import assert_judgment

ANSWERS = ["Paris", "Lyon is nice", "Paris, France", "I do not know", "paris", "Marseille"]


@pytest.mark.parametrize("answer", ANSWERS)
def test_judged(judge, answer):
    j = judge("reference@1")
    result = j.score(question="Capital of France?", gold_answer="Paris", model_output=answer)
    assert result.ok
    assert result.model == "mock:judge"


def test_batch(judge):
    j = judge("reference@1")
    items = [
        {"id": str(n), "question": "Capital of France?", "gold_answer": "Paris", "model_output": a}
        for n, a in enumerate(ANSWERS)
    ]
    # Answers of their own, so no request is shared with the single tests on the other worker.
    items = [{**item, "model_output": item["model_output"] + " (batch)"} for item in items]
    assert all(result.ok for result in j.score_many(items, concurrency=2))
"""


def _summary(output: str) -> dict[str, int]:
    """The session table's rows, by label."""
    table = output.split("judgecards", 1)[-1]
    return {
        label: int(value)
        for label, value in re.findall(r"^([a-z]+(?: [a-z]+)?)\s+(\d+)\s*$", table, re.M)
    }


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_inner=INNER_SUITE)
    return pytester


@pytest.mark.slow
def test_recorded_under_xdist_then_replayed_offline_with_no_calls(inner: pytest.Pytester) -> None:
    db = inner.path / "judgments.db"
    first = inner.runpytest_subprocess("-n", "2", f"--judge-db={db}", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=7)
    text = first.stdout.str()
    assert "database is locked" not in text and "StoreError" not in text
    counts = _summary(text)
    # 6 single items + a batch of 6, all different requests.
    assert counts["judgments"] == 12
    assert counts["provider calls"] == 12
    assert counts["cache hits"] == 0
    assert counts["input tokens"] > 0 and counts["error records"] == 0
    assert "7 on a mock model. MOCK PROVIDER: scores are synthetic" in text

    again = inner.runpytest_subprocess(
        "-n", "2", f"--judge-db={db}", "--judge-offline", "-p", "no:cacheprovider"
    )
    again.assert_outcomes(passed=7)
    counts = _summary(again.stdout.str())
    assert (counts["judgments"], counts["cache hits"], counts["provider calls"]) == (12, 12, 0)
    assert counts["input tokens"] == 0
    assert "offline" in again.stdout.str()


def test_an_unrecorded_item_fails_its_test_offline(inner: pytest.Pytester) -> None:
    db = inner.path / "judgments.db"
    inner.runpytest(f"--judge-db={db}", "-p", "no:cacheprovider").assert_outcomes(passed=7)
    inner.makepyfile(
        test_new=textwrap.dedent(
            """
            def test_new_item(judge):
                judge("reference@1").score(
                    question="Capital of Italy?", gold_answer="Rome", model_output="Rome"
                )
            """
        )
    )
    result = inner.runpytest(f"--judge-db={db}", "--judge-offline", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, failed=1)
    text = result.stdout.str()
    assert "NotRecorded" in text and "question='Capital of Italy?'" in text
    assert "without --judge-offline" in text
    counts = _summary(text)
    assert (counts["failed tests"], counts["provider calls"]) == (1, 0)


def test_the_fixture_takes_model_and_db_from_options_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\njudge_db = from-ini.db\n")
    pytester.makepyfile(
        test_opts=textwrap.dedent(
            """
            from pathlib import Path

            def test_defaults(judge, pytestconfig):
                j = judge("reference@1")
                assert j.model == "mock:other"
                assert Path(j.store.path) == pytestconfig.rootpath / "from-ini.db"
                assert judge("reference@1", model="mock:third").model == "mock:third"
            """
        )
    )
    result = pytester.runpytest("--judge-model=mock:other", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "from-ini.db").exists()


def test_a_suite_without_judges_prints_no_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not re.search(r"-+ judgecards -+", result.stdout.str())


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    # pytest loads the plugin in every project where judgecards is installed.
    code = (
        "import sys, judgecards.pytest_plugin, judgecards.testing; "
        "print(sorted(m for m in ('pydantic', 'jinja2', 'openai', 'judgecards.judging.judge') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"
