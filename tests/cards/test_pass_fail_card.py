"""The pass-fail card: one criterion as data, a short critique before a pass or fail verdict."""

from __future__ import annotations

import json
from pathlib import Path

from calibration import judge_rates
from calibration.labels import label_fields
from judgecards.cards import load_card
from judgecards.schemas import PassFailJudgment
from judgecards.storage import Store
from tests.fakes.http import Script, openai_chat
from tests.fakes.judges import openai_judge

CRITERION = "The answer cites no source that is not in the context. {{ 7*7 }}"


def reply(verdict: str, critique: str = "It cites a paper the context never mentions.") -> str:
    return json.dumps({"critique": critique, "verdict": verdict})


def test_the_criterion_is_data_and_the_verdict_is_the_judges(tmp_path: Path) -> None:
    script = Script(openai_chat(reply("fail")))
    with Store(tmp_path / "pf.db") as store:
        judge = openai_judge(script, "pass-fail@1", db=store)
        result = judge.score(
            criterion=CRITERION, question="What causes tides?", answer="The moon [Smith 2020]."
        )
    assert result.status == "ok" and result.verdict == "fail"
    assert result.output is not None and result.output["critique"].startswith("It cites")
    prompt = json.loads(script.requests[0].content)
    text = json.dumps(prompt)
    # Rendered literally inside its tag, never evaluated: the criterion is data.
    assert "{{ 7*7 }}" in text and "49" not in text and "<criterion>" in text


def test_a_long_critique_is_re_asked(tmp_path: Path) -> None:
    script = Script(openai_chat(reply("pass", "word " * 80)), openai_chat(reply("pass")))
    with Store(tmp_path / "pf.db") as store:
        result = openai_judge(script, "pass-fail@1", db=store).score(
            criterion="Polite.", question="Hi?", answer="Hello."
        )
    assert result.verdict == "pass" and result.attempts == 2
    assert "at most 60 words" in json.dumps(json.loads(script.requests[1].content))


def test_the_card_labels_pass_or_fail_and_reads_as_tpr_tnr() -> None:
    card = load_card("pass-fail@1")
    assert card.output_model is PassFailJudgment
    # The critique comes before the verdict in the schema the judge sees.
    assert list(PassFailJudgment.model_json_schema()["properties"]) == ["critique", "verdict"]
    fields = label_fields(card)
    assert fields["verdict"].choices == ("pass", "fail")
    rates = judge_rates(["fail", "fail", "pass"], ["fail", "pass", "pass"], positive="fail")
    assert rates.tpr.value == 0.5 and rates.tnr.value == 1.0
