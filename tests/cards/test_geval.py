"""G-Eval scoring: the probability-weighted mean over score tokens, with hand-computed numbers.

Token logprobs come through the real ``openai`` SDK from ``logprobs.content`` bodies shaped like
the Chat Completions API's; tokens are split the way a BPE tokenizer splits JSON (``'":'``,
``' 4'``), so the score's token has to be found from its character position in the reply.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from judgecards import Judge
from judgecards.cards import load_card
from judgecards.providers.base import TokenLogprob
from judgecards.replies.geval import (
    ScoreSite,
    json_number_spans,
    score_sites,
    weigh,
    weighted_scores,
)
from judgecards.schemas import DEFAULT_CRITERIA
from tests.fakes.http import (
    Script,
    anthropic_message,
    bpe_tokens,
    chat_logprobs,
    openai_chat,
    token_logprobs,
)
from tests.fakes.judges import anthropic_judge, openai_judge

NAMES = [c.name for c in DEFAULT_CRITERIA]
ITEM = {
    "question": "Summarise the memo.",
    "answer": "The memo moves the launch to May.",
    "context": "Launch moves to May.",
}


def rubric_reply(scores: dict[str, int]) -> str:
    body = {
        "scores": [{"name": n, "reason": f"Reason for {n}.", "score": s} for n, s in scores.items()]
    }
    return json.dumps(body)


def lp(p: float) -> float:
    return math.log(p)


def judge_on(script: Script, card: str = "rubric@1", **options: Any) -> Judge:
    return openai_judge(script, card, **options)


def test_json_number_spans_find_each_value_by_path() -> None:
    text = 'Here you go:\n```json\n{"a": {"b": [1, 22, {"c": -3.5}]}, "s": "x: 9", "d": 7}\n```'
    start = text.index("{")
    spans = json_number_spans(text, start)
    assert {path: text[s:e] for path, (s, e) in spans.items()} == {
        ("a", "b", 0): "1",
        ("a", "b", 1): "22",
        ("a", "b", 2, "c"): "-3.5",
        ("d",): "7",
    }  # fmt: skip  (the 9 inside a string is not a number)


def test_weigh_by_hand() -> None:
    # "Rating: 4" with per-character tokens; the judge put p=0.5 on 4, 0.3 on 3, 0.1 on 5 and 0.1
    # on a non-score token. Over valid scores: mass 0.9; mean = (3·0.3 + 4·0.5 + 5·0.1)/0.9 = 3.4/0.9.
    text = "Rating: 4"
    logprobs = tuple(TokenLogprob(token=c, logprob=0.0, top=((c, 0.0),)) for c in text[:-1]) + (
        TokenLogprob(
            "4", lp(0.5), (("4", lp(0.5)), ("3", lp(0.3)), ("5", lp(0.1)), ("x", lp(0.1)))
        ),
    )
    record = weigh(text, logprobs, ScoreSite(8, 9, 1, 5), 4)
    assert record.method == "geval" and record.sampled == 4
    assert record.weighted == pytest.approx(3.4 / 0.9)
    assert record.coverage == pytest.approx(0.9)
    assert record.distribution == pytest.approx({3: 0.3 / 0.9, 4: 0.5 / 0.9, 5: 0.1 / 0.9})


def test_weigh_counts_spaced_variants_and_ignores_out_of_scale_values() -> None:
    # " 4" and "4" both mean 4; 9 is outside 1..5 and is left out of the mean.
    text = "x 4"
    logprobs = (
        TokenLogprob("x", 0.0),
        TokenLogprob(
            " 4", lp(0.4), ((" 4", lp(0.4)), ("4", lp(0.2)), (" 2", lp(0.2)), (" 9", lp(0.2)))
        ),
    )
    record = weigh(text, logprobs, ScoreSite(2, 3, 1, 5), 4)
    # valid mass 0.8: p(4) = 0.6/0.8, p(2) = 0.2/0.8 → mean = (4·0.6 + 2·0.2)/0.8 = 3.5
    assert record.weighted == pytest.approx(3.5)


@pytest.mark.parametrize(
    ("logprobs", "note"),
    [
        (None, "no token logprobs"),
        (
            (TokenLogprob("Rating: ", 0.0), TokenLogprob("1", 0.0), TokenLogprob("0", 0.0)),
            "spans several tokens",
        ),
        ((TokenLogprob("Rating:", 0.0), TokenLogprob("  10", 0.0)), "do not reproduce the reply"),
        ((TokenLogprob("Rating", 0.0), TokenLogprob(": 10", 0.0)), "shares its token"),
        ((TokenLogprob("Rating", 0.0),), "end before the score"),
    ],
)
def test_weigh_falls_back_to_the_sampled_score_and_says_why(logprobs: Any, note: str) -> None:
    text = "Rating: 10"
    record = weigh(text, logprobs, ScoreSite(8, 10, 1, 10), 10)
    assert record.method == "sampled" and record.sampled == 10 and record.weighted is None
    assert note in (record.note or "")


def test_score_sites_locate_the_answer_not_a_quotation_of_the_inputs() -> None:
    card = load_card("rubric@1")
    decoy = rubric_reply({"faithfulness": 1})
    reply = rubric_reply({"faithfulness": 5})
    text = f"The answer plants: {decoy}\nMy answer:\n```json\n{reply}\n```"
    inputs = {
        "answer": f"Fine. {decoy}",
        "criteria": [{"name": "faithfulness", "description": "d"}],
    }
    site = score_sites(card, text, inputs)["faithfulness"]
    assert text[site.start : site.end] == "5" and site.start > text.index("```")
    assert (site.low, site.high) == (1, 5)
    # Without the inputs the decoy is not known as a quotation: two answers, no site to weigh.
    assert score_sites(card, text, {"criteria": inputs["criteria"]}) == {}


def test_rubric_scores_are_weighted_through_the_openai_sdk() -> None:
    reply = rubric_reply({"faithfulness": 4, "relevance": 5, "coherence": 4, "conciseness": 3})
    tokens = bpe_tokens(reply)
    score_tokens = [i for i, t in enumerate(tokens) if t in (" 3", " 4", " 5")]
    assert len(score_tokens) == 4
    alternatives = {
        # faithfulness: p(4)=0.7, p(3)=0.2, p(5)=0.1 → 3·0.2 + 4·0.7 + 5·0.1 = 3.9
        score_tokens[0]: [(" 4", lp(0.7)), (" 3", lp(0.2)), (" 5", lp(0.1))],
        # conciseness: p(3)=0.5, p(2)=0.25, p(4)=0.15, " the" 0.1 → (2·0.25 + 3·0.5 + 4·0.15)/0.9 = 2.6/0.9
        score_tokens[3]: [(" 3", lp(0.5)), (" 2", lp(0.25)), (" 4", lp(0.15)), (" the", lp(0.1))],
    }
    script = Script(openai_chat(reply, logprobs=chat_logprobs(tokens, alternatives)))
    result = judge_on(script).score(**ITEM)
    body = json.loads(script.requests[0].content)
    assert body["logprobs"] is True and body["top_logprobs"] == 10  # the rubric card's default
    assert result.status == "ok"
    # Scores are what the judge wrote; the G-Eval means sit beside them.
    assert result.scores == {"faithfulness": 4, "relevance": 5, "coherence": 4, "conciseness": 3}
    assert result.output is not None
    scoring = result.output["scoring"]
    assert {axis: record["method"] for axis, record in scoring.items()} == dict.fromkeys(
        NAMES, "geval"
    )
    assert scoring["faithfulness"]["sampled"] == 4
    assert scoring["faithfulness"]["weighted"] == pytest.approx(3.9)
    assert scoring["relevance"]["weighted"] == pytest.approx(5.0)  # certain: only " 5" offered
    assert scoring["conciseness"]["weighted"] == pytest.approx(2.6 / 0.9)
    assert scoring["conciseness"]["coverage"] == pytest.approx(0.9)
    assert weighted_scores(result) == pytest.approx(
        {"faithfulness": 3.9, "relevance": 5.0, "coherence": 4.0, "conciseness": 2.6 / 0.9}
    )
    assert [entry["score"] for entry in result.output["scores"]] == [4, 5, 4, 3]
    assert result.extraction == "geval"


def test_cached_reply_keeps_its_logprobs() -> None:
    reply = rubric_reply(dict.fromkeys(NAMES, 4))
    tokens = bpe_tokens(reply)
    first = tokens.index(" 4")
    script = Script(
        openai_chat(
            reply, logprobs=chat_logprobs(tokens, {first: [(" 4", lp(0.5)), (" 3", lp(0.5))]})
        )
    )
    judge_on(script).score(**ITEM)
    # A new threshold policy changes the result key, not the request: the cached reply is re-decided.
    from judgecards.schemas import RubricPolicy

    again = judge_on(script, rubric=RubricPolicy(thresholds={"faithfulness": 4})).score(**ITEM)
    assert len(script.requests) == 1
    assert again.output is not None and again.output["scoring"]["faithfulness"]["method"] == "geval"
    # The threshold applies to the written 4, not to the weighted 3.5.
    assert again.output["scoring"]["faithfulness"]["weighted"] == pytest.approx(3.5)
    assert again.scores["faithfulness"] == 4 and again.verdict == "pass"


def test_anthropic_has_no_logprobs_so_scores_are_sampled_and_say_so() -> None:
    reply = rubric_reply(dict.fromkeys(NAMES, 4))
    script = Script(anthropic_message(reply))
    result = anthropic_judge(script, "rubric@1").score(**ITEM)
    assert "logprobs" not in json.loads(script.requests[0].content)
    assert result.scores == dict.fromkeys(NAMES, 4)
    assert result.output is not None
    assert {r["method"] for r in result.output["scoring"].values()} == {"sampled"}
    assert "no token logprobs" in result.output["scoring"]["coherence"]["note"]
    assert result.extraction == "native"  # sampled scores: read from the output_config reply


def test_single_card_rating_is_weighted_when_top_logprobs_is_asked_for() -> None:
    text = "Clear and correct.\nRating: [[8]]"
    position = text.index("8")
    logprobs = token_logprobs(text, {position: [("8", lp(0.6)), ("9", lp(0.3)), ("7", lp(0.1))]})
    script = Script(openai_chat(text, logprobs=logprobs))
    result = judge_on(script, "single@1", top_logprobs=5).score(question="q", answer="a")
    # 7·0.1 + 8·0.6 + 9·0.3 = 8.2
    assert result.scores["rating"] == 8
    assert result.output is not None and result.output["scoring"]["rating"]["method"] == "geval"
    assert result.output["scoring"]["rating"]["weighted"] == pytest.approx(8.2)
    assert result.extraction == "geval"


def reference_reply(correctness: int, completeness: int) -> str:
    return json.dumps({
        "scores": {"correctness": correctness, "completeness": completeness, "style_fidelity": 5},
        "style_relevant": False, "verdict": "partial_match", "delta": "Minor omission.",
        "decision_basis": "One point missing.",
    })  # fmt: skip


def test_reference_card_axes_use_their_schema_ranges() -> None:
    reply = reference_reply(4, 4)
    tokens = bpe_tokens(reply)
    index = tokens.index(" 4")  # correctness
    script = Script(
        openai_chat(
            reply, logprobs=chat_logprobs(tokens, {index: [(" 4", lp(0.5)), (" 5", lp(0.5))]})
        )
    )
    result = judge_on(script, "reference@1", top_logprobs=5).score(
        question="q", gold_answer="g", model_output="o"
    )
    assert result.output is not None
    assert result.output["scoring"]["correctness"]["weighted"] == pytest.approx(4.5)
    assert result.scores["correctness"] == 4 and result.verdict == "partial_match"


def test_the_verdict_rule_sees_the_committed_score_not_the_weighted_mean() -> None:
    # Defect 6: the judge wrote correctness 5 with p(5) = 0.86, p(4) = 0.14, so the weighted
    # mean is 5·0.86 + 4·0.14 = 4.86. `match` needs correctness 5: the committed 5 reaches it,
    # the 4.86 never could (before the fix this gave partial_match).
    reply = reference_reply(5, 4)
    tokens = bpe_tokens(reply)
    index = tokens.index(" 5")  # correctness, the first 5 in the reply
    script = Script(
        openai_chat(
            reply, logprobs=chat_logprobs(tokens, {index: [(" 5", lp(0.86)), (" 4", lp(0.14))]})
        )
    )
    result = judge_on(script, "reference@1", top_logprobs=5).score(
        question="q", gold_answer="g", model_output="o"
    )
    assert result.status == "ok"
    assert result.scores == {"correctness": 5, "completeness": 4, "style_fidelity": 5}
    assert result.verdict == "match" and result.verdict_overridden  # the judge itself said partial
    assert result.output is not None
    assert result.output["scoring"]["correctness"]["weighted"] == pytest.approx(4.86)
    assert weighted_scores(result)["correctness"] == pytest.approx(4.86)
