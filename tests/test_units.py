"""The unit a judge decides (`judgecards.units`): an item is one judgment, a pair is both orders
under one id; the cascade, the jury and alignment judge and count through it."""

from __future__ import annotations

from judgecards import Judge
from judgecards.cards import load_card
from judgecards.storage import Store
from judgecards.units import ITEMS, PairUnits, is_pairwise

PAIRS = [
    {"id": 7, "question": "Capital of France?", "answer_a": "Paris", "answer_b": "Lyon"},
    {"question": "2 + 2?", "answer_a": "4", "answer_b": "5"},
]
ITEMS_GIVEN = [
    {"id": "a1", "question": "Capital of France?", "answer": "Paris"},
    {"question": "2 + 2?", "answer": "5"},
]


def test_a_pair_is_one_unit_of_two_orders_paid_once() -> None:
    kind = PairUnits(model_a="x", model_b="y")
    with Store(":memory:") as store, Judge("pairwise@1", "mock:judge", db=store) as judge:
        first = kind.judge_many(judge, PAIRS, concurrency=2)
        again = kind.judge_many(judge, PAIRS, concurrency=2)
    assert [kind.unit_id(c) for c in first] == ["7", None]  # the item-id rule: text or None
    assert [kind.result_id(c) for c in first] == [c.first_order.result_id for c in first]
    assert [c.first_order.result_id != c.second_order.result_id for c in first] == [True, True]
    assert all(kind.usable(c) for c in first) and {c.model_a for c in first} == {"x"}
    assert [len(kind.verdicts(c)) for c in first] == [2, 2] == [len(kind.orders)] * 2
    assert (kind.calls(first), kind.calls(again)) == (4, 0)  # both orders, then both stored
    assert kind.noun == "pairs"


def test_an_item_is_one_unit_of_one_judgment() -> None:
    with Store(":memory:") as store, Judge("single@1", "mock:judge", db=store) as judge:
        first = ITEMS.judge_many(judge, ITEMS_GIVEN, concurrency=2)
        again = ITEMS.judge_many(judge, ITEMS_GIVEN, concurrency=2)
    assert [ITEMS.unit_id(r) for r in first] == ["a1", None]
    assert [ITEMS.result_id(r) for r in first] == [r.id for r in first]
    assert all(ITEMS.usable(r) for r in first)
    assert [ITEMS.verdicts(r) for r in first] == [[r.verdict] for r in first]
    assert ITEMS.orders == ("",)
    assert (ITEMS.calls(first), ITEMS.calls(again)) == (2, 0)


def test_a_pairwise_card_is_one_with_both_answers() -> None:
    assert is_pairwise(load_card("pairwise@1"))
    assert not is_pairwise(load_card("single@1"))
