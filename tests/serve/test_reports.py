"""Reports on the server and in the browser: /reports, /reports/{card}/{model},
GET /v1/audits/{id}/report, and the saved file opened in Chromium with the network blocked.

The database is `tests.builders.report_database` (judged through the real SDK over a scripted transport,
audits ingested, winners imported); the expected numbers are ``audit report --json`` and
``estimate --json`` on it. Screenshots go to tests/serve/screenshots/ (gitignored).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from calibration.audits import calibrations
from judgecards.cli import cli
from judgecards.serve.reports import report_link
from tests.builders import (
    HOSTILE_MODEL,
    MODEL,
    ServedApp,
    cli_json,
    fill_sheet,
    report_judged,
    start_server,
)
from tests.builders import report_database as build

RESAMPLES = 300


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    work = tmp_path_factory.mktemp("reports")
    # In a thread of its own: the session's Playwright may already run an event loop here.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(build, work / "served.db", work).result()
    app = start_server(work / "served.db", report_resamples=RESAMPLES)
    try:
        yield app
    finally:
        app.stop()


def report_json(*args: Any) -> Any:
    """A command's ``--json`` report (exit 1 is a failed gate, still a report)."""
    return cli_json(*args, "--json", exit_codes=(0, 1))


def test_reports_are_for_admins_only(served: ServedApp) -> None:
    admin, labeler = served.token("admin", "ann"), served.token("labeler", "bob")
    routes = ["/reports", report_link("reference@1", MODEL), "/v1/audits/1/report"]
    with httpx.Client(base_url=served.url, timeout=60) as client:
        for route in routes:
            assert client.get(route).status_code == 401, route
            refused = client.get(route, headers=served.headers(labeler))
            assert refused.status_code == 403, route
            assert "kappa" not in refused.text and "match" not in refused.text
            assert client.get(route, headers=served.headers(admin)).status_code == 200, route
        index = client.get("/reports", headers=served.headers(admin)).text
    for card in ("reference@1", "pairwise@1"):
        assert f'href="{report_link(card, MODEL)}"' in index
    (headline,) = calibrations(served.db_path)  # the newest labelled audit's cached headline
    assert headline.card == "reference@1" and headline.describe() in index
    assert "never checked against people" in index  # pairwise: labels, but no audit


def test_audit_report_json_is_audit_reports(served: ServedApp) -> None:
    admin = served.headers(served.token("admin", "ann"))
    expected = report_json("audit", "report", "--card", "reference@1", "--model", MODEL,
                        "--db", served.db_path, "--resamples", RESAMPLES)["audits"]  # fmt: skip
    corrected = report_json(
        "estimate", "--card", "reference@1", "--model", MODEL, "--db", served.db_path
    )
    with httpx.Client(base_url=served.url, timeout=60) as client:
        for audit in expected:
            got = client.get(f"/v1/audits/{audit['id']}/report", headers=admin)
            assert got.status_code == 200, got.text
            body = got.json()
            assert (body["audit_id"], body["primary"], body["labelers"]) == (
                audit["id"], audit["primary"], audit["labelers"],
            )  # fmt: skip
            assert body["kappa"] == audit["kappa"] and body["agreement"] == audit["agreement"]
            for field in body["fields"]:
                want = audit["fields"][field["field"]]
                assert field["kappa"] == want["kappa"]
                assert field["confusion"] == want["report"]["confusion"]
                ceiling = want["human_ceiling"]
                assert field["human_ceiling_kappa"] == (
                    None if ceiling is None else ceiling["pairs"][0]["kappa"]["value"]
                )
            assert [d["result_id"] for d in body["disagreements"]] == [
                d["result_id"] for d in audit["disagreements"]
            ]
            assert [(e["name"], e["corrected"], e["judge_only"]) for e in body["estimates"]] == [
                (e["name"], e["corrected"], e["judge_only"]) for e in corrected["estimates"]
            ]
        openapi = client.get("/openapi.json", headers=admin).json()
        route = openapi["paths"]["/v1/audits/{audit_id}/report"]["get"]
        assert route["responses"]["200"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/AuditReportOut"
        }


def test_bad_requests_are_4xx_with_the_field(served: ServedApp) -> None:
    admin = served.headers(served.token("admin", "ann"))
    with httpx.Client(base_url=served.url, timeout=60) as client:
        missing = client.get("/v1/audits/999/report", headers=admin)
        assert missing.status_code == 404
        assert missing.json()["error"] == {
            "code": "not_found", "message": "no audit #999", "field": "path.audit_id",
        }  # fmt: skip
        for bad in ("x", "0", "1'%20OR%201=1", "99999999999999999999999"):
            got = client.get(f"/v1/audits/{bad}/report", headers=admin)
            assert got.status_code == 422 and got.json()["error"]["field"] == "path.audit_id", bad
        for route in ("/reports/reference/" + MODEL, "/reports/nosuch@1/" + MODEL,
                      "/reports/reference@1/openai:nobody", "/reports/reference@1%27--/x"):  # fmt: skip
            got = client.get(route, headers=admin)
            assert got.status_code == 404 and got.json()["error"]["code"] == "not_found", route


# --------------------------------------------------------------------------- in the browser


def svg_boxes(page: Any) -> list[list[float]]:
    boxes: list[list[float]] = page.eval_on_selector_all(
        "figure.plot svg",
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })",
    )
    return boxes


@pytest.mark.browser
def test_the_served_page_draws_every_plot_under_the_csp(
    served: ServedApp, browser: Any, screenshot_dir: Path
) -> None:
    admin = served.token("admin", "ann")
    context = browser.new_context(extra_http_headers=served.headers(admin))
    outside: list[str] = []
    violations: list[str] = []

    def guard(route: Any) -> None:
        if route.request.url.startswith(served.url + "/"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    try:
        page.goto(served.url + report_link("pairwise@1", MODEL), timeout=60_000)
        n_plots = int(page.eval_on_selector("main", "m => m.textContent.match(/(\\d+) plots/)[1]"))
        boxes = svg_boxes(page)
        assert len(boxes) == n_plots == page.locator("figure.plot").count() == 6
        assert all(w > 50 and h > 50 for w, h in boxes), boxes
        # Colours survive the CSP: presentation attributes, not style attributes.
        fills = page.eval_on_selector_all(
            "figure[data-plot=distributions] svg path[fill='#1f5fa8']",
            "els => els.map(e => getComputedStyle(e).fill)",
        )
        assert fills and set(fills) == {"rgb(31, 95, 168)"}
        assert page.title() == "pairwise@1 · openai:gpt-4o · judgecards"
        assert page.locator("img").count() == 0 and HOSTILE_MODEL in page.inner_text("main")
        page.screenshot(path=str(screenshot_dir / "report-served-pairwise.png"), full_page=True)
        page.goto(served.url + report_link("reference@1", MODEL), timeout=60_000)
        boxes = svg_boxes(page)
        # Seven: the corrected estimates are two plots, shares (0-1) apart from mean scores.
        assert len(boxes) == 7 and all(w > 50 and h > 50 for w, h in boxes)
        # The disagreements show hostile inputs as text: nothing ran or loaded.
        assert page.title() == "reference@1 · openai:gpt-4o · judgecards"
        assert (
            page.locator("main img, main iframe, main script, main a[href^=javascript]").count()
            == 0
        )
        assert '<script>document.title="pwned"</script>' in page.inner_text("main")
        page.screenshot(path=str(screenshot_dir / "report-served-reference.png"), full_page=True)
    finally:
        context.close()
    assert outside == [] and violations == []


@pytest.mark.browser
def test_the_saved_file_opens_offline_with_every_plot(
    served: ServedApp, tmp_path: Path, browser: Any, screenshot_dir: Path
) -> None:
    from judgecards.report import build_report
    from judgecards.report.views import judge_views, plot_count
    from judgecards.storage import Store

    output = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", "-o", str(output), "--db", str(served.db_path),
                                      "--resamples", str(RESAMPLES)])  # fmt: skip
    assert result.exit_code == 0, result.output
    with Store(served.db_path) as store:
        expected = plot_count(judge_views(build_report(store, n_resamples=100)))
    # Offline, and every request refused but the file's own navigation.
    context = browser.new_context(offline=True)
    refused: list[str] = []
    requests: list[str] = []

    def only_the_file(route: Any) -> None:
        if route.request.url == output.as_uri():
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_file)
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(output.as_uri())
        boxes = svg_boxes(page)
        assert len(boxes) == expected == 13
        assert all(w > 50 and h > 50 for w, h in boxes), boxes
        # The hostile inputs stayed text: nothing ran, nothing loaded, the title is the report's.
        assert page.title() == "judgecards report · served.db"
        assert page.locator("img, iframe, script").count() == 0
        assert '<script>document.title="pwned"</script>' in page.inner_text("main")
        page.screenshot(path=str(screenshot_dir / "report-file.png"), full_page=True)
    finally:
        context.close()
    assert refused == []
    assert requests == [output.as_uri()]  # the file itself, and not one request more


def _contrarian(row: dict[str, str]) -> dict[str, Any]:
    """A labeler who reads every answer the other way round from the judge: kappa < 0."""
    verdict = "match" if row["model_output"].startswith("wrong") else "mismatch"
    score = 5 if verdict == "match" else 1
    return {"verdict": verdict, "correctness": score, "completeness": score, "style_fidelity": 5}


def _negative_kappa_db(db: Path, work: Path) -> None:
    from calibration.audits import Audit

    report_judged(db, n=45)
    with Audit(db, n_resamples=200) as audit:
        sheet = work / "contrarian.csv"
        audit.sample(card="reference@1", model=MODEL, n=30, seed=4, sheet=sheet)
        fill_sheet(sheet, _contrarian)
        audit.ingest(sheet, labeler="carl")


_MARKS_IN_AXES = """figure => {
  const axes = figure.querySelector('svg [id$="axes_1"]');
  const box = axes.querySelector('[id$="patch_2"] path').getBoundingClientRect();
  const marks = [...axes.querySelectorAll(':scope > [id*="line2d"] use')].map(u => {
    const r = u.getBoundingClientRect();
    return [r.left + r.width / 2, r.top + r.height / 2];
  });
  const ticks = [...figure.querySelectorAll('svg [id*="%s"] text')]
    .map(t => t.textContent.replace('\\u2212', '-').trim()).filter(t => t !== '')
    .map(Number).filter(n => !Number.isNaN(n));
  return {box: [box.left, box.top, box.right, box.bottom], marks, ticks};
}"""


@pytest.mark.browser
def test_plots_show_a_negative_kappa_and_keep_scales_apart_at_1280px(
    tmp_path: Path, browser: Any, screenshot_dir: Path
) -> None:
    """Issue 22 item 21: the kappa axis was 0-1 (kappa -0.8 drawn off it), the corrected
    estimates put 0-1 shares and 1-5 means on one axis, and the per-field table was cut off
    at 1280 px."""
    db = tmp_path / "negative.db"
    with ThreadPoolExecutor(1) as pool:
        pool.submit(_negative_kappa_db, db, tmp_path).result()
    [audit] = report_json("audit", "report", "--db", db, "--resamples", 200)["audits"]
    assert audit["kappa"]["value"] < -0.3
    output = tmp_path / "report.html"
    made = CliRunner().invoke(
        cli, ["report", "-o", str(output), "--db", str(db), "--resamples", "200"]
    )
    assert made.exit_code == 0, made.output
    context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(output.as_uri())
        page.screenshot(path=str(screenshot_dir / "report-negative-kappa.png"), full_page=True)

        def inside(plot: str, ticks: str) -> dict[str, Any]:
            found: dict[str, Any] = page.eval_on_selector(
                f"figure[data-plot={plot}]", _MARKS_IN_AXES % ticks
            )
            left, top, right, bottom = found["box"]
            assert found["marks"], plot
            for x, y in found["marks"]:
                assert left - 1 <= x <= right + 1 and top - 1 <= y <= bottom + 1, (plot, x, y)
            return found

        over_time = inside("over-time", "ytick")
        assert min(over_time["ticks"]) < audit["kappa"]["value"] <= max(over_time["ticks"])
        fields = inside("fields", "xtick")
        assert min(fields["ticks"]) < 0
        # Shares and means on axes of their own.
        shares = inside("estimates-shares", "xtick")
        means = inside("estimates-means", "xtick")
        assert -0.15 <= min(shares["ticks"]) and max(shares["ticks"]) <= 1.15
        assert min(means["ticks"]) >= 0.5 and max(means["ticks"]) <= 5.5
        share_rows = page.locator("figure[data-plot=estimates-shares] tbody tr").all_inner_texts()
        mean_rows = page.locator("figure[data-plot=estimates-means] tbody tr").all_inner_texts()
        assert share_rows and all(r.startswith("share ") for r in share_rows)
        assert mean_rows and all(r.startswith("mean ") for r in mean_rows)
        # The per-field table is whole: nothing cut off or scrolled away at 1280 px.
        table = page.eval_on_selector(
            "figure[data-plot=fields] .table-wrap",
            "w => ({scroll: w.scrollWidth, client: w.clientWidth,"
            " right: w.querySelector('table').getBoundingClientRect().right})",
        )
        assert table["scroll"] <= table["client"] + 1 and table["right"] <= 1280, table
        for plot in ("fields", "over-time", "estimates-shares", "estimates-means"):
            page.locator(f"figure[data-plot={plot}]").screenshot(
                path=str(screenshot_dir / f"report-{plot}-1280.png")
            )
    finally:
        context.close()
