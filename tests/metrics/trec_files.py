"""Readers for trec_eval's test files (qrels, runs and its printed output)."""

from __future__ import annotations

from pathlib import Path


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``topic 0 docno rel`` lines into ``{topic: {docno: rel}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        topic, _, doc, rel = line.split()
        qrels.setdefault(topic, {})[doc] = int(rel)
    return qrels


def read_run(path: Path) -> dict[str, dict[str, float]]:
    """``topic Q0 docno rank score runid`` lines into ``{topic: {docno: score}}``; no rank."""
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        topic, _, doc, _rank, score = line.split()[:5]
        run.setdefault(topic, {})[doc] = float(score)
    return run


def read_trec_eval_output(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval's ``measure  topic  value`` lines into ``{topic_or_all: {measure: value}}``."""
    table: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        measure, topic, value = line.split()
        table.setdefault(topic, {})[measure] = value
    return table
