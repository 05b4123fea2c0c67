"""The public seam on `Judge` (`judgecards.judging.prepared`): what every driver (plan, pool, cost cap,
batch, pairwise budget) learns of an item before paying for it, asked one way."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from judgecards import Judge
from judgecards.judging import PreparedItem, item_id_of


def item(item_id: Any, question: str = "What is 2+2?") -> dict[str, Any]:
    return {"id": item_id, "question": question, "gold_answer": "4", "model_output": "It is 4."}


def test_the_item_id_rule_is_text_or_none() -> None:
    assert item_id_of({"id": 7}) == "7"
    assert item_id_of({"id": "7"}) == "7"
    assert item_id_of({"id": None}) is None
    assert item_id_of({}) is None
    assert item_id_of({"id": ""}) == ""


def test_prepare_tells_stored_cached_refused_and_to_call_apart_without_a_call(
    tmp_path: Path,
) -> None:
    with Judge("reference", "mock:judge", db=tmp_path / "j.db") as judge:
        judge.score_many([item("done")])
        calls = len(judge.provider.history)  # type: ignore[attr-defined]
        given = [
            item("done"),  # judged before: stored
            item("again"),  # same prompt as "done" under another id: its reply is cached
            {"id": "bad", "question": "What is 2+2?"},  # inputs missing: refused
            item(3, question="What is 3+3?"),  # new: to call
        ]
        prepared = judge.prepare(given, classify=True)
        assert [p.state for p in prepared] == ["stored", "cached", "refused", "to_call"]
        assert [p.item_id for p in prepared] == ["done", "again", "bad", "3"]
        stored, cached, refused, to_call = prepared
        assert stored.result is not None and stored.result.item_id == "done"
        assert cached.request is not None and to_call.request is not None
        assert cached.cache_key is not None and cached.cache_key != to_call.cache_key
        assert refused.refusal is not None and "gold_answer" in refused.refusal
        assert refused.result is None  # not recorded unless asked
        assert judge.store.get(refused.key) is None
        assert len(judge.provider.history) == calls  # type: ignore[attr-defined]

        # Without classify the response cache is not consulted: the run looks it up anyway.
        assert [p.state for p in judge.prepare(given)] == [
            "stored",
            "to_call",
            "refused",
            "to_call",
        ]

        recorded = judge.prepare([given[2]], record_refusals=True)[0]
        assert recorded.result is not None and recorded.result.error_kind == "input"
        assert judge.store.get(recorded.key) is not None


def test_plan_counts_what_prepare_finds(tmp_path: Path) -> None:
    with Judge("reference", "mock:judge", db=tmp_path / "j.db") as judge:
        judge.score_many([item("done")])
        plan = judge.plan([item("done"), item("done"), {"id": "bad"}, item("new", "Why?")])
        assert (plan.items, plan.stored, plan.refused, plan.to_judge) == (4, 1, 1, 1)


def test_afinish_judges_a_prepared_item_and_stores_it_like_a_live_run(tmp_path: Path) -> None:
    with Judge("reference", "mock:judge", db=tmp_path / "j.db") as judge:
        (entry,) = judge.prepare([item("x")])
        assert isinstance(entry, PreparedItem) and entry.state == "to_call"
        result = asyncio.run(
            judge.afinish(entry, revise=lambda r: r.model_copy(update={"via": "batch"}))
        )
        assert result.ok and result.via == "batch"
        again = judge.prepare([item("x")])[0]
        assert again.state == "stored" and again.result is not None
        assert again.result.via == "batch"
