"""A labels file is validated against its card's label fields built once per card, not per row.

Building them renders the card's output schema with pydantic (~3 ms); per row, the 3,354 expert
votes ``judgecards demo`` imports took 14 s of CPU. The count of schema renderings is what is
checked (no clock): pydantic's own method is wrapped and still called.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calibration.labels import import_labels, read_labels
from judgecards.cards import load_card
from judgecards.storage import Store
from tests.builders import stored_results


def test_a_file_of_many_rows_renders_the_cards_schema_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "labels.db")
    results = stored_results(store, 40)
    model = load_card("reference@1").output_model
    original = model.model_json_schema
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "model_json_schema", counted)
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(json.dumps({"result_id": r.id, "verdict": "match"}) + "\n" for r in results),
        encoding="utf-8",
    )
    report = import_labels(path, labeler="ann", db=store)
    assert report.labels_written == 40
    assert len(read_labels(store)) == 40
    assert len(calls) <= 1
    store.close()
