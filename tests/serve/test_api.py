"""The JSON API: the same judge, cache and store as the CLI; bad input is a 4xx naming the
field and writes nothing; paging; admin only."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judgecards import Judge
from judgecards.serve.app import create_app

ITEM = {"question": "Capital of France?", "gold_answer": "Paris", "model_output": "Paris."}


class Api:
    def __init__(self, client: TestClient, db: Path) -> None:
        self.client = client
        self.db = db
        tokens = client.app.state.tokens  # type: ignore[attr-defined]
        self.admin = {"Authorization": f"Bearer {tokens.create('admin', 'ann').secret}"}
        self.labeler = {"Authorization": f"Bearer {tokens.create('labeler', 'bob').secret}"}

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
        return self.client.post(path, json=body, headers=headers or self.admin)

    def get(self, path: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
        return self.client.get(path, params=params, headers=headers or self.admin)

    def count(self, table: str) -> int:
        with closing(sqlite3.connect(self.db)) as db:
            return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    db = tmp_path / "api.db"
    with TestClient(create_app(db, max_items=5)) as client:
        yield Api(client, db)


def test_score_stores_results_the_cli_reads_back_from_its_cache(api: Api) -> None:
    body = {"card": "reference", "model": "mock:judge", "items": [{"id": "a", **ITEM}]}
    first = api.post("/v1/score", body)
    assert first.status_code == 200, first.text
    result = first.json()["results"][0]
    assert result["status"] == "ok" and result["item_id"] == "a" and not result["cached"]
    again = api.post("/v1/score", body).json()["results"][0]
    assert again["cached"] and again["id"] == result["id"]
    # The library on the same file finds the same stored judgment: one core, one store.
    with Judge("reference", "mock:judge", db=api.db) as judge:
        [direct] = judge.score_many([{"id": "a", **ITEM}])
    assert direct.cached and direct.id == result["id"] and direct.verdict == result["verdict"]
    assert api.count("results") == 1


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"card": "nope", "model": "mock:judge", "items": [ITEM]}, 422, "card", "body.card"),
        ({"card": "reference", "model": "judge", "items": [ITEM]}, 422, "model", "body.model"),
        ({"card": "reference", "model": "nope:x", "items": [ITEM]}, 422, "model", "body.model"),
        ({"card": "pairwise", "model": "mock:judge", "items": [ITEM]}, 422, "card", "body.card"),
        ({"card": "reference", "model": "mock:judge", "items": []}, 422, "invalid", "body.items"),
        ({"card": "reference", "model": "mock:judge", "items": "x"}, 422, "invalid", "body.items"),
        ({"card": "reference", "model": "mock:judge"}, 422, "invalid", "body.items"),
        (
            {"card": "reference", "model": "mock:judge", "items": [ITEM, {"question": "q"}]},
            422, "input", "body.items.1.gold_answer",
        ),
        (
            {"card": "reference", "model": "mock:judge", "items": [{**ITEM, "id": [1]}]},
            422, "invalid", "body.items.0.id",
        ),
        (
            {"card": "reference", "model": "mock:judge", "items": [ITEM] * 6},
            413, "too_many_items", "body.items",
        ),
        ({"card": "reference", "model": "mock:judge", "items": [ITEM], "x": 1}, 422, "invalid", "body.x"),
    ],
)  # fmt: skip
def test_bad_score_requests_are_4xx_naming_the_field_and_write_nothing(
    api: Api, body: Any, status: int, code: str, field: str
) -> None:
    response = api.post("/v1/score", body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["field"] == field
    assert api.count("results") == 0 and api.count("response_cache") == 0


def test_a_body_that_is_not_json_is_a_422(api: Api) -> None:
    response = api.client.post(
        "/v1/score", content=b"{not json", headers={**api.admin, "Content-Type": "application/json"}
    )
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid"


def test_compare_judges_both_orders_and_stores_the_comparison(api: Api) -> None:
    pair = {"id": "p1", "question": "2+2?", "answer_a": "4", "answer_b": "5"}
    response = api.post(
        "/v1/compare", {"model": "mock:judge", "pairs": [pair], "model_a": "x", "model_b": "y"}
    )
    assert response.status_code == 200, response.text
    [comparison] = response.json()["comparisons"]
    assert comparison["pair_id"] == "p1" and comparison["model_a"] == "x"
    assert comparison["first_order"]["shown_first"] == "A"
    assert comparison["second_order"]["shown_first"] == "B"
    assert api.count("comparisons") == 1 and api.count("results") == 2
    refused = api.post("/v1/compare", {"card": "reference", "model": "mock:judge", "pairs": [pair]})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "body.card"
    missing = api.post("/v1/compare", {"model": "mock:judge", "pairs": [{"answer_a": "4"}]})
    assert (
        missing.status_code == 422 and missing.json()["error"]["field"] == "body.pairs.0.answer_b"
    )
    assert api.count("comparisons") == 1


def test_cards_lists_every_card_version(api: Api) -> None:
    cards = {card["ref"]: card for card in api.get("/v1/cards").json()["cards"]}
    assert "reference@1" in cards and cards["pairwise@1"]["pairwise"]
    assert "gold_answer" in cards["reference@1"]["required_inputs"]


def test_results_filter_and_page_with_a_cursor(api: Api) -> None:
    items = [{"id": str(n), **ITEM, "model_output": f"answer {n}"} for n in range(5)]
    assert (
        api.post(
            "/v1/score", {"card": "reference", "model": "mock:judge", "items": items}
        ).status_code
        == 200
    )
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/results", **params).json()
        seen += [result["item_id"] for result in page["results"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == ["0", "1", "2", "3", "4"] and len(seen) == 5 and pages == 3
    one = api.get("/v1/results", item_id="3").json()["results"]
    assert [result["item_id"] for result in one] == ["3"]
    assert one[0]["inputs"]["model_output"] == "answer 3"
    assert api.get("/v1/results", card="reference", model="mock:judge", status="ok").json()[
        "results"
    ]
    assert api.get("/v1/results", card="pairwise").json()["results"] == []
    assert api.get("/v1/results", model="openai:x").json()["results"] == []
    bad = api.get("/v1/results", status="maybe")
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "query.status"
    assert api.get("/v1/results", limit=0).json()["error"]["field"] == "query.limit"
    assert api.get("/v1/results", cursor="!!").json()["error"]["field"] == "query.cursor"


def test_the_api_is_for_admins_only(api: Api) -> None:
    for method, path in [
        ("POST", "/v1/score"),
        ("POST", "/v1/compare"),
        ("GET", "/v1/cards"),
        ("GET", "/v1/results"),
    ]:
        response = api.client.request(method, path, headers=api.labeler, json={})
        assert response.status_code == 403, path
        assert api.client.request(method, path, json={}).status_code == 401, path


def test_openapi_describes_every_json_route_with_a_response_model(api: Api) -> None:
    spec = api.get("/openapi.json").json()
    for path in ("/v1/score", "/v1/compare", "/v1/cards", "/v1/results"):
        operations = spec["paths"][path]
        for operation in operations.values():
            ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
            assert "$ref" in ok, path
            assert "422" in operation["responses"], path
