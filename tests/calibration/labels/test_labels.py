"""Human labels: label fields from cards, CSV/JSONL import with row validation, export round trip."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calibration.labels import open_store
from calibration.labels.files import from_spreadsheet_cell, spreadsheet_cell
from calibration.labels.transfer import (
    LabelImportError,
    export_labels,
    import_labels,
    label_fields,
    read_labels,
)
from judgecards.cards import load_card
from judgecards.cli import cli
from judgecards.storage import JudgeResult, Store
from tests.builders import stored_results, write_jsonl

MODEL = "openai:gpt-4o"


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = open_store(tmp_path / "labels.db")
    stored_results(store)
    return store


# --------------------------------------------------------------------------- label fields


def test_label_fields_come_from_the_card() -> None:
    reference = label_fields(load_card("reference@1"))
    assert list(reference) == ["verdict", "correctness", "completeness", "style_fidelity"]
    assert reference["verdict"].choices == ("match", "partial_match", "mismatch")
    assert (reference["correctness"].minimum, reference["correctness"].maximum) == (1, 5)
    assert reference["correctness"].scale == (1, 2, 3, 4, 5)
    assert list(label_fields(load_card("pairwise@1"))) == ["winner"]
    assert label_fields(load_card("pairwise@1"))["winner"].choices == ("A", "B", "tie")
    single = label_fields(load_card("single@1"))
    assert single["rating"].describe() == "an integer from 1 to 10"


# --------------------------------------------------------------------------- import


def test_csv_import_by_result_id_and_by_item_id(store: Store, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "labels.csv", [
        {"result_id": "q-r0", "verdict": "match", "correctness": "5", "note": "fine"},
        {"item_id": "q1", "card": "reference@1", "model": MODEL, "verdict": " Mismatch ", "completeness": "2"},
    ])  # fmt: skip
    report = import_labels(path, labeler="alice", db=store)
    assert (report.rows, report.rows_written, report.labels_written) == (2, 2, 4)
    labels = {(label.result_id, label.field): label for label in read_labels(store)}
    assert labels[("q-r0", "correctness")].value == 5  # stored as an int, not "5"
    assert labels[("q-r0", "verdict")].note == "fine"
    assert labels[("q-r1", "verdict")].value == "mismatch"  # case and spaces normalised
    assert labels[("q-r1", "completeness")].item_id == "q1"
    assert {label.labeler for label in labels.values()} == {"alice"}
    assert all(label.audit_id is None and label.card == "reference@1" for label in labels.values())


def test_jsonl_import_with_per_row_labeler_and_time(store: Store, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "labels.jsonl", [
        {"result_id": "q-r0", "verdict": "partial_match", "correctness": 3, "labeler": "bob",
         "created_at": "2025-03-01T10:00:00"},
        {"result_id": "q-r1", "style_fidelity": 4.0, "note": None},
    ])  # fmt: skip
    report = import_labels(path, labeler="alice", db=store)
    assert report.labels_written == 3
    by_field = {(label.result_id, label.field): label for label in read_labels(store)}
    assert by_field[("q-r0", "verdict")].labeler == "bob"
    assert by_field[("q-r0", "verdict")].created_at == datetime(2025, 3, 1, 10, tzinfo=timezone.utc)
    assert (
        by_field[("q-r1", "style_fidelity")].value == 4
        and by_field[("q-r1", "style_fidelity")].labeler == "alice"
    )


def test_every_bad_row_is_reported_with_file_line_and_field_and_nothing_is_written(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "result_id,verdict,correctness,note\n"              # line 1
        "q-r0,match,5,ok\n"                                 # line 2: fine
        "nope,match,5,\n"                                   # line 3: unknown item
        "q-r1,match,6,\n"                                   # line 4: out of range
        "q-r2,match,abc,\n"                                 # line 5: wrong type
        'q-r3,great,4,"a note\nover two lines"\n'           # lines 6-7: not a verdict
        "q-r0,mismatch,,\n"                                 # line 8: duplicate of line 2
        "q-r4,,,\n",                                        # line 9: no label at all
        encoding="utf-8",
    )  # fmt: skip
    with pytest.raises(LabelImportError) as caught:
        import_labels(path, labeler="alice", db=store)
    problems = {(p.line, p.field): p for p in caught.value.errors}
    assert set(problems) == {
        (3, "result_id"),
        (4, "correctness"),
        (5, "correctness"),
        (6, "verdict"),
        (8, "verdict"),
        (9, None),
    }
    assert str(problems[(3, "result_id")]).startswith(f"{path}:3, field 'result_id': unknown item")
    assert "out of range: must be an integer from 1 to 5; got 6" in str(
        problems[(4, "correctness")]
    )
    assert "got 'abc'" in str(problems[(5, "correctness")])
    assert "one of match, partial_match, mismatch" in str(problems[(6, "verdict")])
    assert "duplicate" in str(problems[(8, "verdict")]) and "line 2" in str(
        problems[(8, "verdict")]
    )
    assert "no label" in str(problems[(9, None)])
    assert "nothing was imported" in str(caught.value)
    assert read_labels(store) == []


def test_jsonl_wrong_types_and_bad_lines(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps({"result_id": "q-r0", "correctness": "4"}) + "\n"      # a string, not a number
        + json.dumps({"result_id": "q-r1", "verdict": 3}) + "\n"          # a number, not a string
        + json.dumps({"result_id": "q-r2", "correctness": True}) + "\n"   # a boolean
        + "{not json\n"
        + json.dumps(["a", "list"]) + "\n"
        + json.dumps({"result_id": "q-r3", "corectness": 4}) + "\n",      # typo: unknown column
        encoding="utf-8",
    )  # fmt: skip
    with pytest.raises(LabelImportError) as caught:
        import_labels(path, labeler="alice", db=store)
    problems = {(p.line, p.field): str(p) for p in caught.value.errors}
    assert "must be a JSON number" in problems[(1, "correctness")]
    assert "must be a string" in problems[(2, "verdict")]
    assert "got true" in problems[(3, "correctness")]
    assert "invalid JSON" in problems[(4, None)]
    assert "JSON object" in problems[(5, None)]
    assert "unknown column for reference@1" in problems[(6, "corectness")]


def test_duplicate_of_a_stored_label_is_rejected(store: Store, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "labels.csv", [{"result_id": "q-r0", "verdict": "match"}])
    import_labels(path, labeler="alice", db=store)
    with pytest.raises(LabelImportError) as caught:
        import_labels(path, labeler="alice", db=store)
    assert caught.value.errors[0].field == "verdict"
    assert "already labelled verdict" in str(caught.value.errors[0])
    # Another labeler labelling the same item is not a duplicate.
    assert import_labels(path, labeler="bob", db=store).labels_written == 1


def test_ambiguous_and_incomplete_item_names(store: Store, tmp_path: Path) -> None:
    card = load_card("reference@1")
    # The same item judged twice with different parameters: two stored results.
    twin = JudgeResult(id="q-r0-t1", item_id="q0", status="ok", verdict="match", card=card.ref,
                       card_hash=card.hash, model=MODEL)  # fmt: skip
    store.save(twin, inputs={"question": "Q0?"}, params={"temperature": 1.0})
    path = write_csv(tmp_path / "labels.csv", [
        {"item_id": "q0", "card": "reference@1", "model": MODEL, "verdict": "match"},
        {"item_id": "q1", "card": "reference", "model": MODEL, "verdict": "match"},
        {"item_id": "q1", "verdict": "match"},
        {"result_id": "q-r2", "model": "openai:other", "verdict": "match"},
    ])  # fmt: skip
    with pytest.raises(LabelImportError) as caught:
        import_labels(path, labeler="alice", db=store)
    problems = {p.line: str(p) for p in caught.value.errors}
    assert "ambiguous item: 2 stored results" in problems[2]
    assert "name@version" in problems[3]
    assert "missing card, model" in problems[4]
    assert "does not match the stored result" in problems[5]


def test_skip_invalid_writes_the_good_rows_and_reports_the_rest(
    store: Store, tmp_path: Path
) -> None:
    path = write_csv(tmp_path / "labels.csv", [
        {"result_id": "q-r0", "verdict": "match", "correctness": "5"},
        {"result_id": "q-r1", "verdict": "match", "correctness": "9"},  # one bad field: row left out whole
        {"result_id": "q-r2", "verdict": "mismatch"},
    ])  # fmt: skip
    report = import_labels(path, labeler="alice", db=store, skip_invalid=True)
    assert (report.rows_written, report.labels_written) == (2, 3)
    assert [(p.line, p.field) for p in report.errors] == [(3, "correctness")]
    assert {label.result_id for label in read_labels(store)} == {"q-r0", "q-r2"}


def test_missing_labeler_and_unknown_format(store: Store, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "labels.csv", [{"result_id": "q-r0", "verdict": "match"}])
    with pytest.raises(LabelImportError) as caught:
        import_labels(path, labeler=None, db=store)
    assert caught.value.errors[0].field == "labeler"
    other = tmp_path / "labels.txt"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(LabelImportError, match="--format"):
        import_labels(other, labeler="alice", db=store)


def test_csv_from_a_spreadsheet_with_a_byte_order_mark(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffresult_id,verdict\r\nq-r0,match\r\n".encode())
    assert import_labels(path, labeler="alice", db=store).labels_written == 1


# --------------------------------------------------------------------------- export


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_export_imports_back_into_a_database_with_the_same_results(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"result_id": "q-r0", "verdict": "match", "correctness": 5, "note": "a, \"quoted\"\nnote"},
        {"result_id": "q-r1", "completeness": 2, "labeler": "bob"},
    ])  # fmt: skip
    import_labels(source, labeler="alice", db=store)
    exported = tmp_path / f"out.{suffix}"
    assert export_labels(exported, db=store) == 2

    other = open_store(tmp_path / "other.db")
    stored_results(other)
    report = import_labels(exported, labeler=None, db=other)
    assert report.labels_written == 3

    def key(label: Any) -> tuple[Any, ...]:
        return (
            label.result_id,
            label.labeler,
            label.field,
            label.value,
            label.note,
            label.created_at,
        )

    assert sorted(map(key, read_labels(other))) == sorted(map(key, read_labels(store)))


def test_export_filters_and_streams(store: Store, tmp_path: Path) -> None:
    import_labels(
        write_csv(tmp_path / "a.csv", [{"result_id": "q-r0", "verdict": "match"}]),
        labeler="alice",
        db=store,
    )
    import_labels(
        write_csv(tmp_path / "b.csv", [{"result_id": "q-r1", "verdict": "mismatch"}]),
        labeler="bob",
        db=store,
    )
    buffer = io.StringIO()
    assert export_labels(buffer, db=store, labeler="bob", format="jsonl") == 1
    row = json.loads(buffer.getvalue())
    assert row["labeler"] == "bob" and row["verdict"] == "mismatch" and "audit_id" not in row


# --------------------------------------------------------------------------- CLI


def test_cli_import_exit_codes_and_messages(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    stored_results(open_store(db))
    runner = CliRunner()
    bad = write_csv(
        tmp_path / "bad.csv",
        [{"result_id": "q-r0", "verdict": "match"}, {"result_id": "zzz", "verdict": "match"}],
    )
    result = runner.invoke(
        cli, ["labels", "import", str(bad), "--labeler", "alice", "--db", str(db)]
    )
    assert result.exit_code == 2
    assert f"{bad}:3, field 'result_id': unknown item" in result.output
    assert "nothing was imported" in result.output

    result = runner.invoke(
        cli, ["labels", "import", str(bad), "--labeler", "alice", "--db", str(db), "--skip-invalid"]
    )
    assert result.exit_code == 0, result.output
    assert "Imported 1 label(s) from 1 of 2 row(s)" in result.output
    assert "unknown item" in result.output  # the skipped row is reported

    result = runner.invoke(cli, ["labels", "export", "-", "--format", "csv", "--db", str(db)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [(r["result_id"], r["labeler"], r["verdict"]) for r in rows] == [
        ("q-r0", "alice", "match")
    ]


# --------------------------------------------------------------------------- CSV safety


FORMULAS = ['=HYPERLINK("http://x.example","click")', "+1+1", "-2+3", "@SUM(A1)"]


def formula_results(store: Store) -> None:
    """Stored results whose item ids a spreadsheet would run as formulas."""
    card = load_card("reference@1")
    for i, item_id in enumerate(FORMULAS):
        store.save(
            JudgeResult(id=f"f-r{i}", item_id=item_id, status="ok", verdict="match",
                        card=card.ref, card_hash=card.hash, model=MODEL),
            inputs={"question": "Q?", "gold_answer": "G", "model_output": "A"}, params={},
        )  # fmt: skip


def test_export_escapes_every_formula_cell_and_imports_back_exactly(
    store: Store, tmp_path: Path
) -> None:
    formula_results(store)
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"item_id": item_id, "card": "reference@1", "model": MODEL, "verdict": "match",
         "correctness": 4, "note": FORMULAS[(i + 1) % len(FORMULAS)]}
        for i, item_id in enumerate(FORMULAS)
    ] + [{"result_id": "q-r0", "verdict": "match", "note": "'=already quoted"}])  # fmt: skip
    import_labels(source, labeler="=cmd|' /C calc'!A0", db=store)
    exported = tmp_path / "out.csv"
    assert export_labels(exported, db=store) == len(FORMULAS) + 1

    with exported.open(newline="", encoding="utf-8") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    runnable = [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert runnable == []  # every would-be formula starts with ' instead
    assert '\'=HYPERLINK("http://x.example","click")' in cells
    assert "''=already quoted" in cells and "4" in cells  # numbers are left alone

    other = open_store(tmp_path / "other.db")
    stored_results(other)
    formula_results(other)
    assert import_labels(exported, labeler=None, db=other).labels_written == 2 * len(FORMULAS) + 1

    def key(label: Any) -> tuple[Any, ...]:
        return (label.result_id, label.item_id, label.labeler, label.field, label.value, label.note)

    assert sorted(map(key, read_labels(other))) == sorted(map(key, read_labels(store)))


@pytest.mark.parametrize(
    ("value", "cell"),
    [("=1+1", "'=1+1"), ("+A1", "'+A1"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
     ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("'=1", "''=1"), ("-1", "-1"), ("+2.5", "+2.5"),
     ("'quoted'", "'quoted'"), ("plain", "plain"), (4, 4), ("", "")],
)  # fmt: skip
def test_spreadsheet_cells_escape_formulas_and_read_back(value: Any, cell: Any) -> None:
    assert spreadsheet_cell(value) == cell
    if isinstance(value, str):
        assert from_spreadsheet_cell(cell) == value


def test_an_unclosed_quote_is_a_located_problem_not_swallowed_rows(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(
        'result_id,verdict,note\nq-r0,match,"forgot to close\nq-r1,mismatch,second row\n',
        encoding="utf-8",
    )
    with pytest.raises(LabelImportError) as caught:
        import_labels(path, labeler="alice", db=store)
    [problem] = caught.value.errors
    assert problem.line == 2
    assert "lines 2-3 were read as one row" in str(problem) and "quote" in str(problem)
    assert read_labels(store) == []

    result = CliRunner().invoke(
        cli,
        ["labels", "import", str(path), "--labeler", "alice", "--db", str(store.path),
         "--skip-invalid"],
    )  # fmt: skip
    assert "Imported 1 label(s) from 1 of 1 row(s)" not in result.output  # what it said before
    assert f"{path}:2" in result.output and "read as one row" in result.output


def test_a_quote_closed_too_late_is_reported_where_the_row_starts(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(
        "result_id,verdict,note\n"
        'q-r0,match,"oops\n'
        'q-r1,mismatch,"a proper, quoted note"\n'
        "q-r2,match,\n",
        encoding="utf-8",
    )
    with pytest.raises(LabelImportError) as caught:
        import_labels(path, labeler="alice", db=store)
    assert [p.line for p in caught.value.errors] == [2]
    assert "lines 2-3" in str(caught.value.errors[0])


def test_a_corrected_label_is_reimported_with_replace(store: Store, tmp_path: Path) -> None:
    first = write_csv(tmp_path / "first.csv", [
        {"result_id": "q-r0", "verdict": "match", "correctness": "5"},
        {"result_id": "q-r1", "verdict": "match"},
    ])  # fmt: skip
    import_labels(first, labeler="alice", db=store)
    import_labels(first, labeler="bob", db=store)
    corrected = write_csv(tmp_path / "corrected.csv", [
        {"result_id": "q-r0", "verdict": "mismatch", "correctness": "2", "note": "misread it"},
    ])  # fmt: skip
    with pytest.raises(LabelImportError) as caught:
        import_labels(corrected, labeler="alice", db=store)
    assert "--replace" in str(caught.value.errors[0])

    report = import_labels(corrected, labeler="alice", db=store, replace=True)
    assert (report.labels_written, report.labels_replaced) == (2, 2)
    labels = {(l.result_id, l.labeler, l.field): l for l in read_labels(store)}  # noqa: E741
    assert len(labels) == len(read_labels(store)) == 6  # replaced, not added
    assert labels[("q-r0", "alice", "verdict")].value == "mismatch"
    assert labels[("q-r0", "alice", "verdict")].note == "misread it"
    assert labels[("q-r0", "alice", "correctness")].value == 2
    assert labels[("q-r0", "bob", "verdict")].value == "match"  # another labeler's label stays
    assert labels[("q-r1", "alice", "verdict")].value == "match"  # not in the file: untouched

    twice = write_csv(tmp_path / "twice.csv", [
        {"result_id": "q-r1", "verdict": "mismatch"}, {"result_id": "q-r1", "verdict": "match"},
    ])  # fmt: skip
    with pytest.raises(LabelImportError, match="duplicate"):  # within one file: still an error
        import_labels(twice, labeler="alice", db=store, replace=True)


def test_cli_replace(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    stored_results(open_store(db))
    runner = CliRunner()
    path = write_csv(tmp_path / "l.csv", [{"result_id": "q-r0", "verdict": "match"}])
    args = ["labels", "import", str(path), "--labeler", "alice", "--db", str(db)]
    assert runner.invoke(cli, args).exit_code == 0
    write_csv(path, [{"result_id": "q-r0", "verdict": "mismatch"}])
    result = runner.invoke(cli, args)
    assert result.exit_code == 2 and "pass --replace" in result.output
    result = runner.invoke(cli, [*args, "--replace"])
    assert result.exit_code == 0, result.output
    assert "Imported 1 label(s) (1 replaced)" in result.output
    assert [label.value for label in read_labels(Store(db))] == ["mismatch"]


def test_a_bad_labels_file_creates_no_database(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    path = tmp_path / "labels.csv"
    path.write_text('result_id,verdict\nq-r0,"match\n', encoding="utf-8")
    with pytest.raises(LabelImportError):
        import_labels(path, labeler="alice", db=db)
    assert not db.exists()
    path.write_text("result_id,verdict\nq-r0,match\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["labels", "import", str(path), "--labeler", "alice", "--db", str(db)]
    )
    assert result.exit_code == 2 and "no such database" in result.output
    assert not db.exists()


def test_export_from_a_missing_database_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    result = CliRunner().invoke(
        cli, ["labels", "export", str(tmp_path / "out.csv"), "--db", str(db)]
    )
    assert result.exit_code == 2 and f"cannot open database {db}: no such file" in result.output
    assert not db.exists() and not (tmp_path / "out.csv").exists()


def test_an_unwritable_export_path_is_a_located_error(store: Store, tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "out.csv"
    result = CliRunner().invoke(cli, ["labels", "export", str(target), "--db", str(store.path)])
    assert (
        result.exit_code == 2 and str(target) in result.output and "does not exist" in result.output
    )
    assert "Traceback" not in result.output and not target.parent.exists()
