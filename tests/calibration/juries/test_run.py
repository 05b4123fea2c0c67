"""`calibration.Jury`: several judges on the real OpenAI SDK over scripted HTTP, one shared pool."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable

import httpx2
import pytest

from calibration.juries import Jury
from judgecards import Judge
from judgecards.errors import WrongCardKind
from tests.fakes.http import Script, openai_chat, reference_judgment
from tests.fakes.judges import openai_judge

# correctness/completeness that the reference card's rules turn into each verdict
_SCORES = {"match": (5, 5), "partial_match": (3, 3), "mismatch": (1, 1)}


def _item(i: int) -> dict[str, str]:
    return {
        "id": f"q{i}",
        "question": f"Question Q{i}?",
        "gold_answer": "Paris",
        "model_output": "Paris",
    }


def _asked(request: httpx2.Request) -> int:
    """The item number the judge was asked about (from the rendered prompt)."""
    prompt = json.dumps(json.loads(request.content)["messages"])
    found = re.search(r"Question Q(\d+)\?", prompt)
    assert found is not None
    return int(found.group(1))


def _reply(verdict: str) -> httpx2.Response:
    correctness, completeness = _SCORES[verdict]
    return openai_chat(reference_judgment(correctness, completeness, verdict=verdict))


def _juror(
    says: Callable[[int], str | None], model: str, **options: object
) -> tuple[Judge, Script]:
    """A judge whose verdict on item i is ``says(i)``; ``None`` is an unparseable reply."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        verdict = says(_asked(request))
        return openai_chat("no judgment here") if verdict is None else _reply(verdict)

    script = Script(default=answer)
    return openai_judge(script, model=model, max_attempts=1), script


def test_the_judges_share_one_bounded_pool() -> None:
    in_flight = 0
    peak = 0

    def slow(verdict: str) -> Callable[[httpx2.Request], object]:
        async def reply(request: httpx2.Request) -> httpx2.Response:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.02)
            in_flight -= 1
            return _reply(verdict)

        return reply

    scripts = [Script(default=slow("match")) for _ in range(3)]  # type: ignore[arg-type]
    judges = [openai_judge(s, model=f"m{k}") for k, s in enumerate(scripts)]
    with Jury(judges) as jury:
        run = jury.score_many([_item(i) for i in range(4)], concurrency=2)
    # One pool of 2 across three judges; a pool per judge would have let 6 calls overlap.
    assert peak == 2
    assert sum(len(s.requests) for s in scripts) == 12
    assert run.verdicts == ["match"] * 4


def test_majority_with_a_tie_and_reliability_against_the_majority() -> None:
    a, _ = _juror(lambda i: "match", "a")
    b, _ = _juror(lambda i: "match" if i < 2 else "mismatch", "b")
    c, _ = _juror(lambda i: "mismatch" if i == 0 else "match", "c")
    d, _ = _juror(lambda i: "mismatch" if i in (0, 3) else "match", "d")
    with Jury([a, b, c, d]) as jury:
        run = jury.score_many([_item(i) for i in range(4)])
    # item 0: 2-2 (a, b vs c, d) is undecided; 1: 4-0; 2: 3-1; 3: 2-2 again
    assert run.verdicts == [None, "match", "match", None]
    assert run.items[2].confidence == pytest.approx(0.75)
    assert run.items[0].confidence == 0.0
    assert run.items[2].votes == {"openai:a": "match", "openai:b": "mismatch",
                                  "openai:c": "match", "openai:d": "match"}  # fmt: skip
    by_name = {r.judge: r for r in run.reliability}
    assert by_name["openai:a"].agreement == 1.0
    assert by_name["openai:b"].agreement == 0.5  # right on item 1, wrong on item 2
    assert by_name["openai:b"].measured_against == "jury majority"


def test_a_judge_that_fails_on_an_item_is_recorded_and_casts_no_vote() -> None:
    a, _ = _juror(lambda i: "match", "a")
    b, _ = _juror(lambda i: None if i == 1 else "mismatch", "b")
    c, _ = _juror(lambda i: "mismatch", "c")
    with Jury([a, b, c]) as jury:
        run = jury.score_many([_item(i) for i in range(3)])
    failed = run.items[1]
    assert len(failed.results) == 3 and not failed.results[1].ok
    assert set(failed.errors) == {"openai:b"}
    assert failed.errors["openai:b"].startswith("invalid_output")
    assert failed.votes["openai:b"] is None
    assert failed.verdict is None  # a 1-1 split of the two judges that answered
    assert run.verdicts[0] == "mismatch"
    reliability = {r.judge: r for r in run.reliability}
    assert (reliability["openai:b"].answered, reliability["openai:b"].errors) == (2, 1)


def test_fitted_weights_learn_to_invert_a_judge_that_is_always_wrong() -> None:
    truth = ["match" if i % 3 else "mismatch" for i in range(12)]
    flip = {"match": "mismatch", "mismatch": "match"}
    honest, _ = _juror(lambda i: truth[i] if i != 4 else flip[truth[i]], "honest")
    liar, _ = _juror(lambda i: flip[truth[i]], "liar")
    lazy, _ = _juror(lambda i: "match", "lazy")
    items = [_item(i) for i in range(12)]
    jury = Jury([honest, liar, lazy], method="fitted")
    with pytest.raises(ValueError, match=r"call jury\.fit"):
        jury.score_many(items)
    with pytest.raises(ValueError, match="12 items but 11 labels"):
        jury.fit(items, truth[:11])
    jury.fit(items, truth)
    run = jury.score_many(items)  # served from the store: the judges were asked once per item
    assert run.verdicts == truth  # item 4, where 'honest' is wrong, follows the inverted liar
    weights = {r.judge: r.weight for r in run.reliability}
    assert weights["openai:liar"] is not None and weights["openai:liar"] < 0
    assert weights["openai:honest"] is not None and weights["openai:honest"] > 0
    assert run.reliability[1].agreement == 0.0
    assert run.reliability[1].measured_against == "human labels"
    jury.close()


def test_dawid_skene_estimates_each_judges_accuracy_without_labels() -> None:
    truth = ["match" if i % 2 else "mismatch" for i in range(10)]
    flip = {"match": "mismatch", "mismatch": "match"}
    judges = [
        _juror(lambda i: truth[i], "a")[0],
        _juror(lambda i: truth[i], "b")[0],
        _juror(lambda i: truth[i] if i not in (0, 1, 2) else flip[truth[i]], "c")[0],
    ]
    with Jury(judges, method="dawid-skene") as jury:
        run = jury.score_many([_item(i) for i in range(10)])
    assert run.verdicts == truth
    accuracy = {r.judge: r.agreement for r in run.reliability}
    assert accuracy["openai:c"] < accuracy["openai:a"]
    assert math.isclose(accuracy["openai:a"], 1.0, abs_tol=1e-3)
    assert all(0.5 < item.confidence <= 1.0 for item in run.items)


def test_unanimous_dawid_skene_batch_needs_no_em() -> None:
    judges = [_juror(lambda i: "match", m)[0] for m in ("a", "b")]
    with Jury(judges, method="dawid-skene") as jury:
        run = jury.score_many([_item(0), _item(1)])
    assert run.verdicts == ["match", "match"]


def test_cards_without_a_single_verdict_and_small_juries_are_refused() -> None:
    script = Script()
    pairwise = openai_judge(script, "pairwise@1")
    reference = openai_judge(script)
    with pytest.raises(WrongCardKind, match="all be pairwise or all single-item"):
        Jury([reference, pairwise])
    with pytest.raises(WrongCardKind, match="no verdict"):
        Jury([reference, openai_judge(script, "single@1")])
    with pytest.raises(ValueError, match="at least two judges"):
        Jury([reference])
    with pytest.raises(ValueError, match="method must be"):
        Jury([reference, reference], method="vote")  # type: ignore[arg-type]
    assert script.requests == []


def test_default_names_tell_repeated_models_apart() -> None:
    script = Script()
    jury = Jury([openai_judge(script), openai_judge(script)])
    assert jury.names == ("openai:gpt-4o (reference@1) #1", "openai:gpt-4o (reference@1) #2")


def _pair_juror(model: str, *, biased: bool = False) -> tuple[Judge, Script]:
    """A pairwise judge that picks the answer saying "good" (or, ``biased``, always the answer
    shown first)."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        prompt = json.dumps(json.loads(request.content)["messages"])
        good_first = prompt.index("good answer") < prompt.index("poor answer")
        winner = "A" if biased or good_first else "B"
        return openai_chat(json.dumps({"reasoning": "Compared both.", "winner": winner}))

    script = Script(default=answer)
    return openai_judge(script, "pairwise@1", model=model, max_attempts=1), script


def test_a_pairwise_jury_votes_once_per_answer_order() -> None:
    pairs = [
        {"id": "p0", "question": "Q0?", "answer_a": "a good answer", "answer_b": "a poor answer"},
        {"id": "p1", "question": "Q1?", "answer_a": "a poor answer", "answer_b": "a good answer"},
    ]
    (fair, s1), (fair2, s2), (biased, s3) = (
        _pair_juror("m1"), _pair_juror("m2"), _pair_juror("m3", biased=True)
    )  # fmt: skip
    with Jury([fair, fair2, biased]) as jury:
        run = jury.score_many(pairs, concurrency=3)
    assert [len(s.requests) for s in (s1, s2, s3)] == [4, 4, 4]  # both orders of both pairs
    assert run.verdicts == ["A", "B"]
    assert [item.item_id for item in run.items] == ["p0", "p1"]
    # the position-biased judge says "first shown" both times: A, then B once mapped back
    assert run.items[0].votes["openai:m3 [A first]"] == "A"
    assert run.items[0].votes["openai:m3 [B first]"] == "B"
    assert run.items[0].confidence == pytest.approx(5 / 6)
    by_name = {r.judge: r for r in run.reliability}
    assert by_name["openai:m1"].agreement == 1.0
    assert by_name["openai:m3"].agreement == 0.5  # right in one order of each pair
    assert by_name["openai:m3"].answered == 2


def test_a_fitted_pairwise_jury_weighs_each_judge_over_both_orders() -> None:
    pairs = [
        {"id": f"p{i}", "question": f"Q{i}?", "answer_a": a, "answer_b": b}
        for i, (a, b) in enumerate(
            [("a good answer", "a poor answer"), ("a poor answer", "a good answer")] * 4
        )
    ]
    truth = ["A", "B"] * 4
    judges = [_pair_juror("m1")[0], _pair_juror("m3", biased=True)[0]]
    with Jury(judges, method="fitted") as jury:
        run = jury.fit(pairs, truth).score_many(pairs)
    assert run.verdicts == truth
    weights = {r.judge: r.weight for r in run.reliability}
    assert set(weights) == {"openai:m1", "openai:m3"}
    assert weights["openai:m1"] is not None and weights["openai:m3"] is not None
    assert weights["openai:m1"] > weights["openai:m3"]
