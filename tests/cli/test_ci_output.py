"""CI-native output of score, compare, eval and audit report: ``--ci junit=FILE``,
``--ci summary=FILE`` and ``--ci github``, through click's CliRunner against the real SDK and a loopback server.

The JUnit files are parsed back and held against the file pytest's own ``--junitxml`` writes;
judge replies carry text hostile to each format (XML-forbidden characters, markup, pipes,
workflow commands) to show it arrives as data.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from calibration.audits import Audit
from judgecards.cli import cli
from judgecards.cli._ci_output import (
    CiCase,
    CiRun,
    github_annotations,
    junit_xml,
    markdown_summary,
)
from tests.builders import MODEL, T0, VERDICTS, labelled_audit, run_cli, save_results, write_jsonl
from tests.fakes.server import FakeServer, card_reply

# A judge reply no card can use, written to break XML, Markdown and workflow commands.
HOSTILE = (
    "</error>]]><![CDATA[ <script>alert(1)</script> \x00\x1b[31m | 100% ,:\r\n"
    "::error title=pwned::injected\n"
)


def reply(prompt: str) -> str:
    return HOSTILE if "BAD" in prompt else card_reply(prompt)


@pytest.fixture
def server(serve: Callable[..., FakeServer]) -> FakeServer:
    """A fake server whose judge answers items marked BAD with unusable, hostile text."""
    return serve(reply=reply)


def invoke(server: FakeServer, *args: Any) -> Result:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
    return run_cli(*args, env=env)


def items(ids: list[str], bad: set[str] = frozenset()) -> list[dict[str, str]]:  # type: ignore[assignment]
    return [
        {
            "id": item_id,
            "question": f"Question {item_id}?" + (" BAD" if item_id in bad else ""),
            "gold_answer": "Gold",
            "model_output": "Answer",
        }
        for item_id in ids
    ]


def score(server: FakeServer, tmp_path: Path, rows: list[dict[str, str]], *args: Any) -> Result:
    data = write_jsonl(tmp_path / "items.jsonl", rows)
    return invoke(
        server, "score", "--card", "reference@1", "--model", "openai:local-judge",
        "--max-attempts", "1", data, "--output", tmp_path / "out.jsonl",
        "--db", tmp_path / "j.db", *args,
    )  # fmt: skip


def suite_of(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root
    return suite


def cases_of(suite: ET.Element) -> dict[str, ET.Element]:
    return {case.attrib["name"]: case for case in suite.iter("testcase")}


def annotation_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("::")]


# --------------------------------------------------------------------------- score


def test_score_junit_has_one_case_per_item_and_error_records_as_errors(
    tmp_path: Path, server: FakeServer
) -> None:
    rows = items(["q1", "q2 <b>&", "q3"], bad={"q2 <b>&"})
    junit = tmp_path / "report.xml"
    result = score(server, tmp_path, rows, "--ci", f"junit={junit}")
    assert result.exit_code == 1, result.output  # the contract: an error record beyond --max-errors

    suite = suite_of(junit)
    assert suite.attrib["tests"] == "3"
    assert (suite.attrib["errors"], suite.attrib["failures"], suite.attrib["skipped"]) == (
        "1",
        "0",
        "0",
    )
    cases = cases_of(suite)
    assert list(cases) == ["q1", "q2 <b>&", "q3"]
    error = cases["q2 <b>&"].find("error")
    assert error is not None and error.attrib["type"] == "invalid_output"
    # The judge's reply arrives as text: markup intact, only what XML 1.0 forbids removed.
    text = error.text or ""
    assert "</error>]]><![CDATA[ <script>alert(1)</script>" in text
    assert "\x00" not in text and "\x1b" not in text
    assert "[31m" in text and "| 100% ,:" in text
    properties = {p.attrib["name"]: p.attrib["value"] for p in cases["q1"].iter("property")}
    assert properties["verdict"] == "match"
    assert json.loads(properties["scores"]) == {
        "completeness": 4,
        "correctness": 5,
        "style_fidelity": 5,
    }
    assert not list(cases["q1"].iter("error")) and not list(cases["q1"].iter("failure"))


def test_score_github_annotations_escape_the_judges_text(
    tmp_path: Path, server: FakeServer
) -> None:
    rows = items(["ok", "bad,one:x"], bad={"bad,one:x"})
    result = score(server, tmp_path, rows, "--ci", "github", "--max-errors", "1")
    assert result.exit_code == 0, result.output  # within --max-errors: annotations change nothing

    (line,) = annotation_lines(result.stdout)
    match = re.fullmatch(r"::error title=([^:]*)::(.*)", line)
    assert match is not None, line
    title, message = match.groups()
    assert title == "judgecards score%3A bad%2Cone%3Ax (invalid_output)"
    assert "%0A" not in title and "\n" not in message and "\r" not in message
    # Whatever the reply contained, no line of stdout starts a second workflow command.
    assert not any(out.startswith("::error title=pwned") for out in result.stdout.splitlines())


def test_the_step_summary_is_appended_and_its_cells_are_literal(
    tmp_path: Path, server: FakeServer
) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("# Earlier step\n\n", encoding="utf-8")
    rows = items(["a|b\n<img src=x>", "fine"], bad={"a|b\n<img src=x>"})
    assert score(server, tmp_path, rows, "--ci", f"summary={summary}").exit_code == 1
    assert score(server, tmp_path, rows, "--ci", f"summary={summary}").exit_code == 1

    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# Earlier step\n\n")
    assert text.count("### judgecards score: reference\\@1 on openai\\:local\\-judge") == 2
    row = next(line for line in text.splitlines() if line.startswith("| a"))
    # Four cells: every | inside an item's text is escaped, so the table keeps its columns.
    assert len(re.findall(r"(?<!\\)\|", row)) == 5, row
    assert not re.search(r"(?<!\\)<", text)  # no HTML: every < is escaped
    assert "\\<img src\\=x\\>" in row and "invalid\\_output" in row


def test_ci_paths_are_checked_before_any_call(tmp_path: Path, server: FakeServer) -> None:
    rows = items(["q1"])
    result = score(server, tmp_path, rows, "--ci", f"junit={tmp_path / 'missing' / 'r.xml'}")
    assert result.exit_code == 2
    assert "--ci junit's directory" in result.stderr and "does not exist" in result.stderr
    result = score(server, tmp_path, rows, "--ci", f"summary={tmp_path}")
    assert result.exit_code == 2 and "is a directory" in result.stderr
    result = score(server, tmp_path, rows, "--ci", f"junit={tmp_path / 'out.jsonl'}")
    assert result.exit_code == 2 and "--ci junit is also another output" in result.stderr
    result = score(server, tmp_path, rows, "--ci", f"junit={tmp_path / 'j.db'}")
    assert result.exit_code == 2
    assert server.requests == 0 and not (tmp_path / "j.db").exists()


# --------------------------------------------------------------------------- compare


def test_compare_has_one_case_per_pair_and_refuses_github_with_json(
    tmp_path: Path, server: FakeServer
) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [
        {"id": f"p{i}", "question": f"Q{i}" + (" BAD" if i == 2 else ""), "answer": f"A says {i}"}
        for i in range(4)
    ])  # fmt: skip
    b = write_jsonl(tmp_path / "b.jsonl", [
        {"id": f"p{i}", "question": f"Q{i}" + (" BAD" if i == 2 else ""), "answer": f"B says {i}"}
        for i in range(4)
    ])  # fmt: skip
    common = ["compare", "--model", "openai:local-judge", "--max-attempts", "1", a,
              b, "--output", tmp_path / "cmp.jsonl", "--db", tmp_path / "j.db"]  # fmt: skip

    result = invoke(server, *common, "--json", "--ci", "github")
    assert result.exit_code == 2 and "--ci github" in result.output
    assert server.requests == 0

    junit = tmp_path / "cmp.xml"
    result = invoke(server, *common, "--ci", f"junit={junit}", "--ci", "github")
    assert result.exit_code == 1, result.output
    suite = suite_of(junit)
    assert (suite.attrib["tests"], suite.attrib["errors"], suite.attrib["failures"]) == (
        "4",
        "1",
        "0",
    )
    cases = cases_of(suite)
    assert list(cases) == ["p0", "p1", "p2", "p3"]
    error = cases["p2"].find("error")
    assert error is not None and "A shown first" in (error.text or "")
    winners = {p.attrib["value"] for c in suite.iter("testcase") for p in c.iter("property")
               if p.attrib["name"] == "winner"}  # fmt: skip
    assert winners <= {"A", "B", "tie"} and winners
    (line,) = annotation_lines(result.stdout)
    assert line.startswith("::error title=judgecards compare%3A p2 (invalid_output)::")


# --------------------------------------------------------------------------- eval

EVAL_CONFIG = """\
items: items.jsonl
tiers:
  - name: format
    checks:
      - {type: length, field: model_output, min: 1}
  - name: judge
    judge:
      card: reference
      model: openai:local-judge
      max_attempts: 1
      pass_verdicts: [match]
"""


def test_eval_cases_name_the_deciding_tier(tmp_path: Path, server: FakeServer) -> None:
    rows = items(["good", "empty", "bad"], bad={"bad"})
    rows[1]["model_output"] = ""
    write_jsonl(tmp_path / "items.jsonl", rows)
    (tmp_path / "eval.yaml").write_text(EVAL_CONFIG, encoding="utf-8")
    junit, summary = tmp_path / "eval.xml", tmp_path / "summary.md"

    result = invoke(
        server, "eval", tmp_path / "eval.yaml", "--db", tmp_path / "j.db", "--ci", f"junit={junit}",
        "--ci", f"summary={summary}", "--ci", "github",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    suite = suite_of(junit)
    assert (suite.attrib["tests"], suite.attrib["failures"], suite.attrib["errors"]) == (
        "3",
        "1",
        "1",
    )
    cases = cases_of(suite)
    failure = cases["empty"].find("failure")
    assert failure is not None and failure.attrib["type"] == "format"
    assert failure.attrib["message"].startswith("tier 1 (format): ")
    error = cases["bad"].find("error")
    assert error is not None and error.attrib["type"] == "judge"
    assert error.attrib["message"].startswith("tier 2 (judge): ")
    tiers = {c.attrib["name"]: {p.attrib["name"]: p.attrib["value"] for p in c.iter("property")}
             for c in suite.iter("testcase")}  # fmt: skip
    assert tiers["good"]["tier"] == "judge" and tiers["good"]["verdict"] == "match"
    # A failed item is an outcome (a warning); an error record is an error.
    lines = annotation_lines(result.stdout)
    assert [line.split(" ", 1)[0] for line in lines] == ["::error", "::warning"]
    assert "| failed | 1 |" in summary.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- audit report


@pytest.mark.parametrize("agree, exit_code", [(True, 0), (False, 1)])
def test_audit_report_has_one_case_per_gate(tmp_path: Path, agree: bool, exit_code: int) -> None:
    db = tmp_path / "audit.db"
    verdicts = [VERDICTS[i % 3] for i in range(30)]
    human = {f"i{i:03d}": VERDICTS[i % 3 if agree else (i + 1) % 3] for i in range(30)}
    with Audit(db, n_resamples=200) as api:
        labelled_audit(api, tmp_path, verdicts, human, prefix="i", created_at=T0)
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    result = CliRunner().invoke(cli, ["audit", "report", "--db", str(db), "--resamples", "200",
                                      "--ci", f"junit={junit}", "--ci", f"summary={summary}",
                                      "--ci", "github"])  # fmt: skip
    assert result.exit_code == exit_code, result.output
    suite = suite_of(junit)
    assert suite.attrib["tests"] == "1"
    (case,) = suite.iter("testcase")
    assert case.attrib["name"] == "reference / openai:gpt-4o"
    failures = list(case.iter("failure"))
    assert len(failures) == (0 if agree else 1)
    gate_row = next(line for line in summary.read_text().splitlines() if line.startswith("| gate"))
    assert gate_row.startswith(
        "| gate reference \\/ openai\\:gpt\\-4o | " + ("passed" if agree else "failed")
    )
    lines = annotation_lines(result.stdout)
    if agree:
        assert lines == []
    else:
        assert "&lt; 0.60" not in failures[0].attrib["message"]
        assert "< 0.60" in failures[0].attrib["message"]
        (line,) = lines
        assert line.startswith(
            "::error title=judgecards audit report%3A reference / openai%3Agpt-4o (gate)::"
        )


def test_audit_report_without_labels_is_one_failed_case(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    with Audit(db) as api:
        save_results(api.store, ["match"] * 3)
        api.sample(card="reference@1", model=MODEL, n=3, seed=0)
    junit = tmp_path / "gate.xml"
    result = CliRunner().invoke(cli, ["audit", "report", "--db", str(db), "--ci", f"junit={junit}"])
    assert result.exit_code == 1, result.output
    suite = suite_of(junit)
    assert (suite.attrib["tests"], suite.attrib["failures"]) == ("1", "1")


# --------------------------------------------------------------------------- the formats


def test_the_junit_file_has_the_shape_pytest_writes(tmp_path: Path, server: FakeServer) -> None:
    (tmp_path / "test_shape.py").write_text(
        "import pytest\n"
        "def test_pass(record_property):\n    record_property('verdict', 'match')\n"
        "def test_fail():\n    assert 1 == 2\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('x')\n"
        "def test_error(broken):\n    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    reference = tmp_path / "pytest.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "pytest.ini",
         "test_shape.py", f"--junitxml={reference}"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    theirs = ET.parse(reference).getroot()
    ours_path = tmp_path / "ours.xml"
    score(server, tmp_path, items(["q1", "q2"], bad={"q2"}), "--ci", f"junit={ours_path}")
    ours = ET.parse(ours_path).getroot()

    assert ours.tag == theirs.tag == "testsuites"
    (their_suite,), (our_suite,) = list(theirs), list(ours)
    assert set(their_suite.attrib) == set(our_suite.attrib)
    for suite in (their_suite, our_suite):
        assert int(suite.attrib["tests"]) == len(list(suite.iter("testcase")))
        float(suite.attrib["time"])
    their_case = next(their_suite.iter("testcase"))
    our_case = next(our_suite.iter("testcase"))
    assert set(their_case.attrib) == set(our_case.attrib) == {"classname", "name", "time"}
    their_error = next(their_suite.iter("error"))
    our_error = next(our_suite.iter("error"))
    assert set(their_error.attrib) <= set(our_error.attrib) == {"message", "type"}
    their_property = next(their_suite.iter("property"))
    our_property = next(our_suite.iter("property"))
    assert set(their_property.attrib) == set(our_property.attrib) == {"name", "value"}
    assert {e.tag for e in our_suite.iter()} <= {e.tag for e in their_suite.iter()} | {"error"}


def test_characters_xml_forbids_are_dropped_and_the_rest_kept() -> None:
    # A lone surrogate (JSON "\\ud800"), NUL and ESC would make the file unreadable or unwritable.
    case = CiCase(
        "id\ud800\x00", "error", "fatal\x1b", "bad \x0b reply", "a\x00b <c> ]]> \U0001f600"
    )
    text = junit_xml(CiRun("score", "s\x01", (case,)))
    text.encode("utf-8")
    (suite,) = ET.fromstring(text)
    (element,) = suite
    (error,) = element
    assert element.attrib["name"] == "id" and error.attrib["type"] == "fatal"
    assert error.attrib["message"] == "bad reply" and error.text == "ab <c> ]]> \U0001f600"


def test_annotations_stop_at_githubs_limit_and_say_how_many_were_cut() -> None:
    cases = tuple(CiCase(f"i{n}", "error", "transient", "timed out") for n in range(25))
    lines = github_annotations(CiRun("score", "reference@1 on x", cases))
    assert len(lines) == 10
    assert lines[:9] == [
        f"::error title=judgecards score%3A i{n} (transient)::timed out" for n in range(9)
    ]
    assert lines[9].startswith("::error title=judgecards score%3A 16 more::16 more case(s)")


def test_a_long_problem_list_is_cut_in_the_summary() -> None:
    cases = tuple(CiCase(f"i{n}", "error", "fatal", "x" * 500) for n in range(60))
    text = markdown_summary(CiRun("score", "s", cases))
    rows = [line for line in text.splitlines() if line.startswith("| i")]
    assert len(rows) == 50 and all(len(row) < 300 for row in rows)
    assert "10 more not listed" in text


def test_annotation_text_cannot_start_another_workflow_command() -> None:
    case = CiCase("a,b:c\n::warning::x", "error", "fatal", "100% wrong\r\n::error::injected\x1b[2J")
    (line,) = github_annotations(CiRun("score", "s", (case,)))
    assert line == (
        "::error title=judgecards score%3A a%2Cb%3Ac%0A%3A%3Awarning%3A%3Ax (fatal)"
        "::100%25 wrong%0D%0A::error::injected [2J"
    )
