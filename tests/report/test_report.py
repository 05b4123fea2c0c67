"""``judgecards report`` and `judgecards.report`: the commands' numbers, one inert offline file.

The database is built as a user builds one (`tests.builders.report_database`: judged through the real OpenAI
SDK over a scripted transport, audits sampled and ingested, winners imported). The expected
numbers are what ``audit report``, ``estimate``, ``rank`` and ``cost`` print as JSON on the same
database, so a report that computed anything its own way would differ.
"""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from judgecards.report import Report, build_report, render_html
from judgecards.report.svg import UnsafeSvg, inline_svg
from judgecards.report.views import judge_views, plot_count
from judgecards.storage import Store
from tests.builders import HOSTILE_MODEL, MODEL, run_cli
from tests.builders import REPORT_HOSTILE as HOSTILE
from tests.builders import report_database as build
from tests.builders import report_judged as judged

RESAMPLES = 300


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Report, str]:
    work = tmp_path_factory.mktemp("report")
    db = work / "judged.db"
    build(db, work)
    with Store(db) as store:
        report = build_report(store, n_resamples=RESAMPLES)
    return db, report, render_html(report)


def as_json(*args: Any) -> Any:
    result = run_cli(*args, "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def interval(e: dict[str, Any]) -> str:
    """How the report prints an estimate given as the commands' JSON."""
    return f"{e['value']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"


def judge(report: Report, card: str) -> Any:
    return next(j for j in report.judges if j.card.startswith(card + "@"))


# --------------------------------------------------------------------------- the numbers


def test_audit_numbers_are_audit_reports(built: tuple[Path, Report, str]) -> None:
    db, report, html = built
    reference = judge(report, "reference")
    expected = as_json("audit", "report", "--card", reference.card, "--model", MODEL, "--db", db,
                       "--resamples", RESAMPLES)  # fmt: skip
    assert [s.to_dict() for s in reference.audits] == expected["audits"]
    assert reference.gate is not None and len(expected["gate"]) == 1
    assert (reference.gate.passed, list(reference.gate.reasons)) == (
        expected["gate"][0]["passed"],
        expected["gate"][0]["reasons"],
    )
    # Two audits over time, the second with two labelers: a ceiling beside each field.
    newest = expected["audits"][-1]
    assert len(expected["audits"]) == 2 and newest["labelers"] == ["alice", "bob"]
    for name, field in newest["fields"].items():
        assert interval(field["kappa"]) in html, name
        ceiling = field["human_ceiling"]["pairs"][0]["kappa"]["value"]
        assert f"{ceiling:.3f}" in html
    for audit in expected["audits"]:
        assert interval(audit["kappa"]) in html and interval(audit["agreement"]) in html
    confusion = newest["fields"]["verdict"]["report"]["confusion"]
    assert reference.latest is not None
    assert reference.latest.fields["verdict"].report is not None
    assert [list(r) for r in reference.latest.fields["verdict"].report.confusion] == confusion
    # The lenient judge calls every partly right answer a match: those are its disagreements.
    assert len(reference.disagreements) == min(20, len(newest["disagreements"]))
    assert {d.result_id for d in reference.disagreements} <= {
        d["result_id"] for d in newest["disagreements"]
    }


def test_estimates_ratings_and_costs_are_the_commands(built: tuple[Path, Report, str]) -> None:
    db, report, html = built
    for card in ("reference", "pairwise"):
        section = judge(report, card)
        expected = as_json("estimate", "--card", section.card, "--model", MODEL, "--db", db)
        assert section.estimates is not None
        assert section.estimates.to_dict() == expected
        for row in expected["estimates"]:
            assert interval(row["corrected"]) in html and interval(row["judge_only"]) in html
        costs = as_json("cost", "--by", "day", "--card", section.card, "--model", MODEL, "--db", db)
        assert [
            {"group": c.day, "results": c.results, "cached": c.cached,
             "input_tokens": c.input_tokens, "output_tokens": c.output_tokens,
             "cost_usd": c.cost_usd, "known_cost_usd": c.known_cost_usd,
             "unknown_cost_results": c.unknown_cost_results}
            for c in section.costs
        ] == costs["groups"]  # fmt: skip
    pairwise = judge(report, "pairwise").pairwise
    assert pairwise is not None and pairwise.ratings is not None
    ranked = as_json("rank", "--card", judge(report, "pairwise").card, "--model", MODEL,
                     "--db", db)  # fmt: skip
    assert [m.to_dict() for m in pairwise.ratings.models] == ranked["models"]
    assert {p.model_a for p in pairwise.pairs} | {p.model_b for p in pairwise.pairs} == {
        "big", "mid", HOSTILE_MODEL,
    }  # fmt: skip
    assert sum(p.n for p in pairwise.pairs) == pairwise.overall.n == 36


def test_corrected_numbers_lead_and_the_judges_own_are_marked(
    built: tuple[Path, Report, str],
) -> None:
    _, report, html = built
    for view in judge_views(report):
        assert view.parts[0].key == "estimates" and view.parts[0].plots
    # Each estimates table heads its uncorrected column so: reference has two (shares, means).
    assert html.count("judge only, UNCORRECTED") == 3
    assert "Score distributions (the judge&#39;s own, uncorrected)" in html
    assert "Win rates (judge only, uncorrected)" in html
    assert "No agreement guarantee is in force" in html


# --------------------------------------------------------------------------- the file


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text outside tags."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(html)
    return parser.tags


def test_the_file_refers_to_nothing_outside_itself(
    tmp_path: Path, built: tuple[Path, Report, str]
) -> None:
    db, report, _ = built
    output = tmp_path / "report.html"
    result = run_cli("report", "--output", output, "--db", db, "--resamples", RESAMPLES)
    assert result.exit_code == 0, result.output
    assert f"Wrote {output}: 2 card versions" in result.stderr
    # It says what it is doing while it works (issue 22 item 23: nothing for 16-55 s).
    assert "report: measuring audits, estimates and rankings (" in result.stderr
    assert "report: drawing the plots: done in " in result.stderr
    html = output.read_text(encoding="utf-8")
    tags = elements(html)
    names = {tag for tag, _ in tags}
    assert not names & {
        "script",
        "img",
        "iframe",
        "link",
        "object",
        "embed",
        "image",
        "foreignobject",
        "base",
        "form",
    }
    for tag, attrs in tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in {"src", "href", "xlink:href", "action", "srcset", "poster", "data"}:
                assert value is not None and value.startswith("#"), (tag, name, value)
            assert "url(" not in (value or "") or (value or "").startswith("url(#"), (
                tag,
                name,
                value,
            )
    assert "@import" not in html and "url(" not in html.split("<body>")[0]
    # One <svg> per plot the views say, and each plot beside its table.
    views = judge_views(report)
    assert sum(1 for tag, _ in tags if tag == "svg") == plot_count(views) == 13
    assert sum(1 for tag, _ in tags if tag == "figure") == plot_count(views)
    # Hostile item text and model names are shown as text, never as markup.
    assert (
        HOSTILE not in html
        and "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in html
    )
    assert HOSTILE_MODEL not in html and "&lt;img src=x onerror=alert(1)&gt;$x$" in html


def test_empty_states_say_so(tmp_path: Path) -> None:
    db = tmp_path / "plain.db"
    judged(db, n=9)
    output = tmp_path / "plain.html"
    result = run_cli("report", "-o", output, "--db", db, "--resamples", 100)
    assert result.exit_code == 0, result.output
    html = output.read_text(encoding="utf-8")
    assert "No corrected estimates: no human labels" in html
    assert "No audits of this card version and judge model" in html
    assert "No pairwise comparisons by this judge." in html
    assert "every number of the judge&#39;s own below" in html
    # Only the score distributions and the tokens are plotted.
    assert html.count("<svg") == 2


def test_errors_exit_2_and_write_nothing(tmp_path: Path) -> None:
    db = tmp_path / "plain.db"
    judged(db, n=3)
    output = tmp_path / "out.html"
    for args, message in [
        (["--db", tmp_path / "missing.db"], "no such file"),
        (["--db", db, "--card", "nosuchcard"], "no stored results of nosuchcard"),
        (["--db", db, "--model", "openai:other"], "no stored results of openai:other"),
    ]:
        result = run_cli("report", "--output", output, *args)
        assert result.exit_code == 2, result.output
        assert message in result.stderr
        assert not output.exists()
    result = run_cli("report", "--output", tmp_path / "no" / "dir.html", "--db", db)
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert not (tmp_path / "missing.db").exists()


# --------------------------------------------------------------------------- the SVG cleaning


def test_svg_is_cleaned_for_inline_use_under_a_csp() -> None:
    raw = (
        '<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
        '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
        '<svg xmlns:xlink="http://www.w3.org/1999/xlink" width="10pt" xmlns="http://www.w3.org/2000/svg">'
        "<metadata><rdf:RDF><cc:Work><dc:date>2025</dc:date></cc:Work></rdf:RDF></metadata>"
        '<defs><style type="text/css">*{stroke-linecap: butt}</style>'
        '<clipPath id="p1"><rect/></clipPath><path id="m1" d="M 0 0"/></defs><!-- a -- comment -->'
        '<g id="axes_1" style="fill: #ffffff; opacity: 0.5"><use xlink:href="#m1" clip-path="url(#p1)"/>'
        "<text style=\"font: bold 9px 'DejaVu Sans'; text-anchor: middle\">https://shown.example</text></g></svg>"
    )
    svg = inline_svg(raw, prefix="x-")
    assert svg.startswith('<svg role="img" width="10pt">')
    for gone in ("<?xml", "DOCTYPE", "w3.org", "metadata", "<style", "style=", "<!--"):
        assert gone not in svg
    assert '<g id="x-axes_1" fill="#ffffff" opacity="0.5">' in svg
    assert '<use xlink:href="#x-m1" clip-path="url(#x-p1)"/>' in svg
    assert (
        'font-weight="bold" font-size="9px" font-family="\'DejaVu Sans\'" text-anchor="middle"'
        in svg
    )
    assert ">https://shown.example</text>" in svg  # shown text, never fetched
    for unsafe in ('<svg><script>alert(1)</script></svg>', '<svg><g onload="x()"/></svg>',
                   '<svg><use href="https://evil.example/#a"/></svg>',
                   '<svg><g fill="url(https://evil.example/a)"/></svg>'):  # fmt: skip
        with pytest.raises(UnsafeSvg):
            inline_svg(unsafe, prefix="y-")


def test_plots_carry_undefined_intervals_without_failing(tmp_path: Path) -> None:
    from judgecards.report import plots

    svg = plots.forest(["a", "b"], [("s", [(0.5, math.nan, math.nan), (math.nan, math.nan, math.nan)])],
                       prefix="t-", xlabel="x")  # fmt: skip
    assert svg.count("<svg") == 1 and 'id="t-' in svg
