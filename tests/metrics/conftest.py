"""Loaders for the third-party data in ../shared/data used by the metrics tests (read in place)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def trec_dir(shared_data: Path) -> Path:
    return shared_data / "trec_eval"


@pytest.fixture(scope="session")
def squad_dir(shared_data: Path) -> Path:
    return shared_data / "squad"


@pytest.fixture(scope="session")
def squad_questions(squad_dir: Path) -> list[dict[str, Any]]:
    data = json.loads((squad_dir / "dev-v2.0_first5articles.json").read_text(encoding="utf-8"))
    return [qa for article in data["data"] for para in article["paragraphs"] for qa in para["qas"]]


@pytest.fixture(scope="session")
def humaneval_rows(shared_data: Path) -> list[dict[str, str]]:
    path = shared_data / "humaneval" / "jamesmurdza_per_task_results.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="session")
def truthfulqa_v1(shared_data: Path) -> list[dict[str, Any]]:
    path = shared_data / "truthfulqa" / "mc_task_v1_2021.json"
    items: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return items


@pytest.fixture(scope="session")
def summeval_pairs(shared_data: Path) -> list[tuple[str, list[str]]]:
    """(summary, the document's 11 references) for SummEval's 1,200 abstractive summaries."""
    references: dict[str, list[str]] = {}
    with (shared_data / "summeval" / "documents.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            references[doc["id"]] = doc["references"]
    pairs = []
    with (shared_data / "summeval" / "annotations_abstractive_12systems.jsonl").open(
        encoding="utf-8"
    ) as fh:
        for line in fh:
            row = json.loads(line)
            pairs.append((row["decoded"], references[row["id"]]))
    return pairs
