"""Exports (``judgecards export``) and the Datasette metadata, on a database filled for real.

The database is filled the way a user fills it: ``score`` and ``compare`` on the mock provider,
one error record from a judge whose replies cannot be read, an audit sampled, labelled in its
sheet and ingested, and a labels file imported. Every canned query of the shipped metadata is
then run on it, with sqlite3 and through Datasette itself.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sqlite3
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from calibration.labels import export_labels, read_labels
from judgecards.cli._output import OutputFile
from judgecards.errors import OutputError
from judgecards.judging import Judge
from judgecards.providers.mock import MockProvider
from judgecards.storage import Store, from_spreadsheet_cell
from judgecards.storage.export import (
    DATASETTE_METADATA,
    Table,
    comparisons_table,
    results_table,
    time_bound,
    write_table,
    write_table_file,
)
from tests.builders import REPO, canned_queries, run_cli
from tests.builders import canned_query as query

EXAMPLES = REPO / "examples"
FORMULA_ID = '=HYPERLINK("http://evil.example","x")'
FORMULA_NOTE = "@SUM(1+1)"
TODAY = datetime.now(timezone.utc).date()


def write_export_items(path: Path) -> Path:
    lines = EXAMPLES.joinpath("reference_items.jsonl").read_text(encoding="utf-8").splitlines()
    lines.append(json.dumps({
        "id": FORMULA_ID, "question": "-2+3?", "gold_answer": "+1",
        "model_output": "=1+2 is what a spreadsheet would compute",
    }))  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def fill_sheet(sheet: Path, db: Path, agree: int) -> tuple[int, int]:
    """Label every row's verdict: the judge's own for the first ``agree`` rows, another after."""
    with sheet.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    with Store(db, read_only=True) as store:
        for position, row in enumerate(rows):
            found = store.get(row["result_id"])
            assert found is not None
            verdict = found[0].verdict
            other = "mismatch" if verdict != "mismatch" else "match"
            row["verdict"] = verdict if position < agree else other
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return agree, len(rows)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A database named judgecards.db (Datasette's key for it is ``judgecards``)."""
    root = tmp_path_factory.mktemp("export")
    db = root / "judgecards.db"
    items = write_export_items(root / "items.jsonl")
    result = run_cli("score", "--card", "reference@1", "--model", "mock:judge", items,
                 "--output", root / "scored.jsonl", "--db", db)  # fmt: skip
    assert result.exit_code == 0, result.output
    result = run_cli("compare", "--model", "mock:judge", "--a", EXAMPLES / "outputs_a.jsonl",
                 "--b", EXAMPLES / "outputs_b.jsonl", "--output", root / "pairs.jsonl", "--db", db)  # fmt: skip
    assert result.exit_code == 0, result.output
    # A judge whose only reply is not JSON: one invalid_output error record.
    broken = Judge("reference@1", "mock:broken", db=db, max_attempts=1,
                   provider=MockProvider(replies=["I refuse to answer in JSON."]))  # fmt: skip
    error = broken.score(question="Q?", gold_answer="G", model_output="A")
    assert error.status == "error" and error.error_kind == "invalid_output"

    sheet = root / "audit.csv"
    result = run_cli("audit", "sample", "--card", "reference@1", "--model", "mock:judge", "--n", 8,
                 "--seed", 3, "--sheet", sheet, "--db", db)  # fmt: skip
    assert result.exit_code == 0, result.output
    agreed, labelled = fill_sheet(sheet, db, agree=5)
    result = run_cli("audit", "ingest", sheet, "--labeler", "alice", "--db", db)
    assert result.exit_code == 0, result.output

    with Store(db, read_only=True) as store:
        formula = next(r for r, _ in store.results() if r.item_id == FORMULA_ID)
    labels = root / "labels.jsonl"
    labels.write_text(json.dumps({
        "result_id": formula.id, "verdict": "mismatch", "correctness": 2, "note": FORMULA_NOTE,
    }) + "\n", encoding="utf-8")  # fmt: skip
    result = run_cli("labels", "import", labels, "--labeler", "bob", "--db", db)
    assert result.exit_code == 0, result.output
    return {"db": db, "root": root, "agreed": agreed, "labelled": labelled}


def export(filled: dict[str, Any], tmp_path: Path, *args: Any, name: str = "out.jsonl") -> Path:
    output = tmp_path / name
    result = run_cli("export", *args, "--output", output, "--db", filled["db"])
    assert result.exit_code == 0, result.output
    return output


def export_labels_cli(
    filled: dict[str, Any], tmp_path: Path, *args: Any, name: str = "out.jsonl"
) -> Path:
    output = tmp_path / name
    result = run_cli("labels", "export", output, *args, "--db", filled["db"])
    assert result.exit_code == 0, result.output
    return output


def stored_results(db: Path) -> list[tuple[Any, dict[str, Any]]]:
    with Store(db, read_only=True) as store:
        return list(store.results())


# --------------------------------------------------------------------------- results


def test_results_jsonl_has_every_stored_row_with_json_columns_nested(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    rows = [
        json.loads(line) for line in export(filled, tmp_path, "results").read_text().splitlines()
    ]
    stored = stored_results(filled["db"])
    assert [row["id"] for row in rows] == [result.id for result, _ in stored]
    by_id = {result.id: (result, inputs) for result, inputs in stored}
    for row in rows:
        result, inputs = by_id[row["id"]]
        assert row["inputs"] == inputs and row["scores"] == result.scores
        assert row["verdict"] == result.verdict and row["status"] == result.status
        assert row["input_tokens"] == result.usage.input_tokens
    assert {row["model"] for row in rows} == {"mock:judge", "mock:broken"}


def test_results_csv_escapes_formula_cells_and_reads_back(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    text = export(filled, tmp_path, "results", name="out.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    formula = [row for row in rows if from_spreadsheet_cell(row["item_id"]) == FORMULA_ID]
    assert len(formula) == 1
    assert formula[0]["item_id"] == "'" + FORMULA_ID  # a spreadsheet shows it as text
    assert not any(
        cell.startswith(("=", "+", "-", "@")) and not cell.lstrip("+-").replace(".", "").isdigit()
        for row in rows
        for cell in row.values()
    )
    inputs = json.loads(from_spreadsheet_cell(formula[0]["inputs"]))
    assert inputs["model_output"].startswith("=1+2")
    assert len(rows) == len(stored_results(filled["db"]))


def test_parquet_is_typed_and_written_in_row_groups(filled: dict[str, Any], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    output = export(filled, tmp_path, "results", "--format", "parquet", name="out.data")
    table = pq.read_table(output)
    stored = stored_results(filled["db"])
    assert table.num_rows == len(stored)
    assert str(table.schema.field("input_tokens").type) == "int64"
    assert str(table.schema.field("latency_s").type) == "double"
    assert table.column("id").to_pylist() == [result.id for result, _ in stored]

    # The library writes one row group per batch, never the whole table at once.
    path = tmp_path / "batched.parquet"
    with Store(filled["db"], read_only=True) as store, path.open("wb") as handle:
        count = write_table(results_table(store), handle, "parquet", batch_rows=4)
    assert count == len(stored)
    assert pq.ParquetFile(path).num_row_groups == -(-len(stored) // 4)


def test_filters_by_card_model_and_dates(filled: dict[str, Any], tmp_path: Path) -> None:
    def ids(*args: Any) -> list[str]:
        output = export(filled, tmp_path, "results", *args)
        return [json.loads(line)["id"] for line in output.read_text().splitlines()]

    stored = stored_results(filled["db"])
    everything = [result.id for result, _ in stored]
    broken = [result.id for result, _ in stored if result.model == "mock:broken"]
    assert ids("--model", "mock:broken") == broken and len(broken) == 1
    assert ids("--card", "reference") == ids("--card", "reference@1")
    assert set(ids("--card", "pairwise")) == {
        r.id for r, _ in stored if r.card.startswith("pairwise@")
    }
    assert ids("--card", "refer") == []  # a name, not a prefix
    # A bare date as --until covers the whole day; --since is inclusive.
    assert ids("--since", TODAY, "--until", TODAY) == everything
    assert ids("--until", TODAY - timedelta(days=1)) == []
    assert ids("--since", TODAY + timedelta(days=1)) == []
    first = stored[0][0].created_at
    assert ids("--until", first.isoformat()) == []  # a time is exclusive
    assert ids("--since", first.isoformat())[0] == stored[0][0].id


def test_time_bounds() -> None:
    assert time_bound("2026-11-30", end=True) == "2026-12-01T00:00:00"
    assert time_bound("2026-11-30") == "2026-11-30T00:00:00"
    assert time_bound(date(2026, 2, 28), end=True) == "2026-03-01T00:00:00"
    assert time_bound("2026-11-30T10:00:00+02:00") == "2026-11-30T08:00:00"
    assert time_bound(None) is None
    with pytest.raises(ValueError):
        time_bound("30/11/2026")


def test_a_bad_date_is_a_usage_error(filled: dict[str, Any], tmp_path: Path) -> None:
    result = run_cli("export", "results", "--since", "last week", "--output", tmp_path / "o.jsonl",
                 "--db", filled["db"])  # fmt: skip
    assert result.exit_code == 2 and "not a date" in result.output
    assert not (tmp_path / "o.jsonl").exists()


def test_paging_streams_every_row_once_in_order(filled: dict[str, Any]) -> None:
    with Store(filled["db"], read_only=True) as store:
        whole = list(store.export_rows("results", page=10_000))
        paged = list(store.export_rows("results", page=3))
        # Rows written in the same microsecond are ordered by id, and paging keeps that order.
        assert paged == whole and len({row["id"] for row in paged}) == len(whole) > 3
        assert list(store.export_rows("comparisons", page=2)) == list(
            store.export_rows("comparisons")
        )


def test_pages_are_read_through_the_time_order_indexes(tmp_path: Path) -> None:
    # Without an index on (created_at, id) every page scans and sorts the whole table:
    # 100,000 results took 20 s of paging instead of 1.3 s.
    with Store(tmp_path / "j.db") as store:
        for table in ("results", "comparisons"):
            plan = store.query(
                f"EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE (created_at, id) > (?, ?) "
                "ORDER BY created_at, id LIMIT 10",
                ("2026-01-01", ""),
            )
            details = " ".join(str(row[-1]) for row in plan)
            assert f"USING INDEX {table}_time" in details and "TEMP B-TREE" not in details


# --------------------------------------------------------------------------- comparisons


def test_comparisons_export_matches_the_store(filled: dict[str, Any], tmp_path: Path) -> None:
    rows = [
        json.loads(line)
        for line in export(filled, tmp_path, "comparisons").read_text().splitlines()
    ]
    with Store(filled["db"], read_only=True) as store:
        stored = store.comparisons()
        table = comparisons_table(store, model="someone-else")
        assert list(table.rows) == []
    assert rows == stored and len(rows) == 5  # the examples share five ids


# --------------------------------------------------------------------------- labels


def test_deprecated_export_labels_warns_and_writes_what_labels_export_writes(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    one = export_labels_cli(filled, tmp_path, name="one.csv")
    other = tmp_path / "other.csv"
    result = run_cli("export", "labels", "--output", other, "--db", filled["db"])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "Warning: `judgecards export labels --output FILE` is deprecated and will be removed in "
        "the next release: use `judgecards labels export FILE`\n"
    )
    assert one.read_bytes() == other.read_bytes()
    rows = list(csv.DictReader(io.StringIO(one.read_text(encoding="utf-8"))))
    with Store(filled["db"], read_only=True) as store:
        labels = read_labels(store)
    assert len(rows) == len({(label.result_id, label.labeler, label.audit_id) for label in labels})
    bob = next(row for row in rows if row["labeler"] == "bob")
    assert bob["note"] == "'" + FORMULA_NOTE and bob["item_id"] == "'" + FORMULA_ID


def test_the_library_and_both_commands_write_the_same_labels_jsonl(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    command = export_labels_cli(filled, tmp_path, name="command.jsonl")
    library = tmp_path / "library.jsonl"
    export_labels(library, db=filled["db"])
    stream = io.StringIO()
    export_labels(stream, db=filled["db"], format="jsonl")
    assert command.read_bytes() == library.read_bytes() == stream.getvalue().encode("utf-8")
    rows = [json.loads(line) for line in command.read_text().splitlines()]
    # Sparse: a row holds the fields that were labelled, no nulls for the others.
    assert all(None not in row.values() for row in rows)
    assert {"correctness", "note"} <= set(rows[-1]) and "correctness" not in rows[0]


def test_labels_parquet_types_score_axes_as_integers(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(export_labels_cli(filled, tmp_path, "--labeler", "bob", name="l.parquet"))
    assert table.num_rows == 1
    assert str(table.schema.field("correctness").type) == "int64"
    assert table.column("correctness").to_pylist() == [2]
    assert table.column("note").to_pylist() == [FORMULA_NOTE]  # Parquet is not a spreadsheet


def test_labels_filters_by_date_and_labeler(filled: dict[str, Any], tmp_path: Path) -> None:
    def count(*args: Any) -> int:
        return len(export_labels_cli(filled, tmp_path, *args).read_text().splitlines())

    assert count("--labeler", "alice") == filled["labelled"]
    assert count("--since", TODAY + timedelta(days=1)) == 0
    assert count("--until", TODAY, "--labeler", "bob") == 1
    result = run_cli("export", "results", "--labeler", "bob", "--output", tmp_path / "x.jsonl",
                 "--db", filled["db"])  # fmt: skip
    assert result.exit_code == 2 and "labels export" in result.output


# --------------------------------------------------------------------------- failures


def test_parquet_without_pyarrow_names_the_extra_before_anything(
    filled: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an absent package looks like
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    output = tmp_path / "out.parquet"
    missing_db = tmp_path / "nothing.db"
    result = run_cli("export", "results", "--output", output, "--db", missing_db)
    assert result.exit_code == 2
    assert "pip install 'judgecards[parquet]'" in result.output and "Traceback" not in result.output
    assert not output.exists() and not missing_db.exists()


def test_the_output_path_is_checked_before_the_database(tmp_path: Path) -> None:
    output = tmp_path / "no-such-dir" / "out.csv"
    result = run_cli("export", "results", "--output", output, "--db", tmp_path / "nothing.db")
    assert (
        result.exit_code == 2 and "does not exist" in result.output and str(output) in result.output
    )
    assert not (tmp_path / "nothing.db").exists()


def test_an_unknown_extension_needs_format(filled: dict[str, Any], tmp_path: Path) -> None:
    result = run_cli("export", "results", "--output", tmp_path / "out.xlsx", "--db", filled["db"])
    assert result.exit_code == 2 and "--format" in result.output


def test_a_missing_database_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    result = run_cli("export", "results", "--output", tmp_path / "o.jsonl", "--db", db)
    assert result.exit_code == 2 and "no such file" in result.output
    assert not db.exists() and not (tmp_path / "o.jsonl").exists()


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")

    def write(handle: Any) -> None:
        handle.write(b"half a file")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="no space left"):
        OutputFile(path).write_with(write)
    assert path.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [path]


def test_a_failed_library_write_leaves_the_old_file(filled: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")
    with Store(filled["db"], read_only=True) as store:
        table = results_table(store)
        broken = Table(table.name, table.columns, [*table.rows, {"id": object()}])
        with pytest.raises(TypeError):  # a row that is not JSON, after many that were written
            write_table_file(broken, path, "jsonl")
        with pytest.raises(ValueError, match="binary"):
            write_table(results_table(store), io.StringIO(), "parquet")
    assert path.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [path]


def test_stdout_needs_a_format_and_gets_the_rows(filled: dict[str, Any]) -> None:
    assert run_cli("export", "comparisons", "--output", "-", "--db", filled["db"]).exit_code == 2
    result = run_cli(
        "export", "comparisons", "--output", "-", "--format", "jsonl", "--db", filled["db"]
    )
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 5


# --------------------------------------------------------------------------- Datasette


def test_the_metadata_ships_the_three_canned_queries() -> None:
    assert set(canned_queries()) == {
        "agreement_per_audit",
        "error_kinds_per_run",
        "costliest_items",
    }


def test_agreement_per_audit_counts_the_labels_that_match_the_judge(filled: dict[str, Any]) -> None:
    rows = query(filled["db"], "agreement_per_audit")
    assert [(row["audit_id"], row["field"]) for row in rows] == [(1, "verdict")]
    row = rows[0]
    assert (row["labels"], row["agreed"]) == (filled["labelled"], filled["agreed"])
    assert row["agreement"] == round(filled["agreed"] / filled["labelled"], 4)
    with Store(filled["db"], read_only=True) as store:
        (cached,) = store.query("SELECT agreement, kappa FROM audits WHERE id = 1")
    assert row["agreement"] == pytest.approx(cached[0]) and row["kappa"] == cached[1]


def test_error_kinds_per_run_finds_the_error_record(filled: dict[str, Any]) -> None:
    rows = {(row["card"], row["model"]): row for row in query(filled["db"], "error_kinds_per_run")}
    broken = rows[("reference@1", "mock:broken")]
    assert (broken["results"], broken["errors"], broken["invalid_output"], broken["other"]) == (
        1,
        1,
        1,
        0,
    )
    scored = rows[("reference@1", "mock:judge")]
    assert scored["errors"] == 0 and scored["results"] == 13 and scored["day"] == TODAY.isoformat()


def test_costliest_items_come_first_by_cost_then_tokens(filled: dict[str, Any]) -> None:
    rows = query(filled["db"], "costliest_items")
    stored = stored_results(filled["db"])
    # Mock judgments cost 0.0, so here tokens decide (priced orderings: tests/cli/test_cost.py).
    expected = sorted(
        (
            (r.cost_usd, (r.usage.input_tokens or 0) + (r.usage.output_tokens or 0))
            for r, _ in stored
        ),
        reverse=True,
    )
    assert [(row["cost_usd"], row["tokens"]) for row in rows] == expected[:100]
    assert rows[0]["tokens"] > 0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_datasette_loads_the_metadata_and_runs_every_query(
    filled: dict[str, Any], tmp_path: Path
) -> None:
    datasette_app = pytest.importorskip("datasette.app")
    db = tmp_path / "judgecards.db"
    # A copy through SQLite's backup (a file copy would miss what is still in the WAL), so
    # Datasette's connections leave the shared fixture alone.
    source, target = sqlite3.connect(filled["db"]), sqlite3.connect(db)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    metadata = yaml.safe_load(DATASETTE_METADATA.read_text(encoding="utf-8"))

    async def fetch() -> dict[str, Any]:
        app = datasette_app.Datasette([str(db)], metadata=metadata)
        await app.invoke_startup()
        answers: dict[str, Any] = {}
        for name in canned_queries():
            response = await app.client.get(f"/judgecards/{name}.json?_shape=array")
            assert response.status_code == 200, response.text
            answers[name] = response.json()
        for table in ("results", "comparisons", "labels", "audits"):
            response = await app.client.get(f"/judgecards/{table}.json?_shape=array&_size=max")
            assert response.status_code == 200, response.text
            answers[table] = response.json()
        return answers

    answers = asyncio.run(fetch())
    for name in canned_queries():
        assert answers[name] == query(db, name), name
    assert len(answers["results"]) == len(stored_results(db))
