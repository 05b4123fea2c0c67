"""Labelling in a real browser: Debian's Chromium driven by Playwright, keyboard only.

A labeler logs in with their personal link, labels the 10 items of an audit with nothing but
keys (digits, arrows, Enter, u, ?), answers the reveal step, and `judgecards audit report` (a
subprocess on the same database) then shows the kappa the labels entered imply, computed here
independently with scikit-learn. Items whose outputs hold ``<script>``, ``onerror=``,
``javascript:`` links, ``</textarea>``, a remote image and a 5,000-character word stay inert:
no dialog, no request off the server, no element made from them, no horizontal overflow.
Screenshots go to tests/serve/screenshots/ for a person to look at.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from sklearn.metrics import cohen_kappa_score

from calibration.labels import open_store
from tests.builders import LABELING_HOSTILE as HOSTILE
from tests.builders import LABELING_JUDGE as JUDGE
from tests.builders import MODEL, SCORES, SECRET_REASON, ServedApp
from tests.builders import seed_labeling_results as seed_results

pytestmark = pytest.mark.browser

# The person disagrees with the judge on items 2 and 7.
HUMAN = ["match", "match", "mismatch", "mismatch", "mismatch",
         "match", "partial_match", "match", "match", "partial_match"]  # fmt: skip
VERDICT_KEY = {"match": "1", "partial_match": "2", "mismatch": "3"}


def record_dialog(dialogs: list[str], dialog: Any) -> None:
    dialogs.append(dialog.message)
    dialog.dismiss()


def question_number(page: Any) -> int:
    text = page.locator("#item .input .text").first.inner_text()
    return int(text.removeprefix("Question ").removesuffix("?"))


def test_ten_items_labelled_with_the_keyboard_give_audit_reports_kappa(
    served_app: ServedApp, page: Any, aborted_requests: list[str], screenshot_dir: Path
) -> None:
    seed_results(served_app.db_path)
    admin = served_app.token("admin", "ann")
    labeler = served_app.token("labeler", "bob")
    created = httpx.post(
        f"{served_app.url}/v1/audits",
        headers=served_app.headers(admin),
        json={"card": "reference@1", "model": MODEL, "n": 10, "seed": 3},
    )
    assert created.status_code == 201, created.text
    audit_id = created.json()["audit_id"]

    dialogs: list[str] = []
    requests: list[str] = []
    bodies: list[str] = []
    page.on("dialog", lambda dialog: record_dialog(dialogs, dialog))
    page.on("request", lambda request: requests.append(f"{request.method} {request.url}"))

    def keep_body(response: Any) -> None:
        if response.url.startswith(served_app.url) and response.status != 204:
            try:
                bodies.append(response.text())
            except Exception:  # a redirect has no body to read
                pass

    page.on("response", keep_body)
    page.goto(served_app.login_url(labeler))
    page.wait_for_url(f"{served_app.url}/")
    page.goto(f"{served_app.url}/label/{audit_id}")
    page.wait_for_selector("#labeling[data-state=label]")

    page.keyboard.press("?")
    assert page.locator("#keys").is_visible()
    page.keyboard.press("?")
    assert not page.locator("#keys").is_visible()

    labelled: list[int] = []
    undone = False
    revised_item = -1
    while len(labelled) < 10:
        page.wait_for_selector("#labeling[data-state=label]")
        i = question_number(page)
        assert page.locator("#progress").inner_text().startswith(f"{len(labelled)} / 10")
        if i == 0:
            page.screenshot(path=str(screenshot_dir / "label-hostile-item.png"), full_page=True)
        human = HUMAN[i]
        correctness, completeness = SCORES[human]
        # A slip on the first item, corrected with the arrows before submitting.
        if not labelled:
            page.keyboard.press(VERDICT_KEY["mismatch"])
            page.keyboard.press("ArrowUp")
        page.keyboard.press(VERDICT_KEY[human])
        for digit in (correctness, completeness, 5):
            page.keyboard.press(str(digit))
        page.keyboard.press("Enter")
        page.wait_for_selector("#labeling[data-state=reveal]")
        assert (page.locator("#reveal tr.differs").count() > 0) == (human != JUDGE[i])
        labelled.append(i)
        if len(labelled) == 4 and not undone:
            # The issue-22 path: label, reveal, Enter, u, relabel with the judge's answer. The
            # judge was shown, so the first label stays: u offers a correction, stored as a
            # marked revision, and the kappa below is the blind labels' kappa.
            page.keyboard.press("Enter")
            page.wait_for_selector("#labeling[data-state=label]")
            waiting = question_number(page)
            page.keyboard.press("u")
            page.wait_for_selector("#labeling[data-state=revise]")
            assert question_number(page) == i
            expect(page.locator("#message")).to_contain_text("stays")
            assert page.locator("#progress").inner_text().startswith("4 / 10")
            page.screenshot(path=str(screenshot_dir / "label-revise.png"), full_page=True)
            judged = SCORES[JUDGE[i]]
            page.keyboard.press(VERDICT_KEY[JUDGE[i]])
            for digit in (*judged, 1):
                page.keyboard.press(str(digit))
            page.keyboard.press("Enter")
            page.wait_for_selector("#labeling[data-state=label]")
            expect(page.locator("#message")).to_contain_text("stored apart")
            assert question_number(page) == waiting
            revised_item = i
            undone = True
            continue
        page.keyboard.press("1" if human != JUDGE[i] else "Enter")
        page.wait_for_selector("#labeling:not([data-state=reveal])")
    page.wait_for_selector("#labeling[data-state=done]")
    assert page.locator("#progress").inner_text().startswith("10 / 10")
    page.screenshot(path=str(screenshot_dir / "label-done.png"), full_page=True)

    # Inert: no dialog, no script ran, nothing requested off the server, no element from an item.
    assert dialogs == []
    assert page.evaluate("window.__pwned") is None
    assert aborted_requests == []
    assert all(r.split(" ", 1)[1].startswith(served_app.url) for r in requests)
    # Blind: nothing the judge reasoned ever reached the browser, and its answer on an item was
    # only asked for after the label of that item.
    assert not any(SECRET_REASON in body for body in bodies)
    posted = [r for r in requests if "/v1/labels" in r or "/judge" in r]
    assert posted[0].startswith("POST") and posted[0].endswith("/v1/labels")
    assert all(
        a.endswith("/v1/labels") for a, b in itertools.pairwise(posted) if b.endswith("/judge")
    )

    with open_store(served_app.db_path) as store:
        reveals = store.query("SELECT reason FROM label_reveals")
        revisions = store.query(
            "SELECT DISTINCT r.result_id, r.revealed_at IS NOT NULL FROM label_revisions r"
        )
        blind = store.query(
            "SELECT value FROM labels WHERE field = 'verdict' AND result_id = ?",
            (f"r{revised_item:03d}",),
        )
    assert revisions == [(f"r{revised_item:03d}", 1)]
    assert blind == [(json.dumps(HUMAN[revised_item]),)]
    # The fourth item's reveal was left with Enter, the revision added none.
    assert sorted(r[0] for r in reveals) == ["judge_wrong"] * (
        sum(h != j for h, j in zip(HUMAN, JUDGE, strict=True))
        - (HUMAN[revised_item] != JUDGE[revised_item])
    )

    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "judgecards",
            "audit",
            "report",
            "--db",
            str(served_app.db_path),
            "--json",
            "--min-kappa",
            "0",
            "--resamples",
            "200",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    audits = json.loads(report.stdout)["audits"]
    verdict = next(a for a in audits if a["id"] == audit_id)["fields"]["verdict"]
    expected = cohen_kappa_score(JUDGE, HUMAN)
    assert verdict["kappa"]["value"] == pytest.approx(expected)
    assert verdict["kappa"]["n"] == 10


def test_hostile_outputs_stay_text_and_the_layout_holds(
    served_app: ServedApp, page: Any, aborted_requests: list[str], screenshot_dir: Path
) -> None:
    seed_results(served_app.db_path)
    admin = served_app.token("admin", "ann")
    created = httpx.post(
        f"{served_app.url}/v1/audits",
        headers=served_app.headers(admin),
        json={"card": "reference@1", "model": MODEL, "n": 10, "seed": 3},
    )
    audit_id = created.json()["audit_id"]
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: record_dialog(dialogs, dialog))
    page.set_viewport_size({"width": 1000, "height": 800})
    page.goto(served_app.login_url(served_app.token("labeler", "carol")))
    page.wait_for_url(f"{served_app.url}/")
    page.goto(f"{served_app.url}/label/{audit_id}")
    seen: list[int] = []
    while True:
        page.wait_for_selector("#labeling[data-state=label], #labeling[data-state=done]")
        if page.locator("#labeling[data-state=done]").count():
            break
        i = question_number(page)
        seen.append(i)
        if i < len(HOSTILE):
            texts = page.locator("#item .text").all_inner_texts()
            assert HOSTILE[i] in texts  # shown exactly, as text
            assert (
                page.locator("#item").locator("script, img, a, link, style, textarea").count() == 0
            )
            layout = page.evaluate(
                "({scroll: document.documentElement.scrollWidth, width: window.innerWidth,"
                " form: document.querySelector('#form').getBoundingClientRect().width,"
                " bar: getComputedStyle(document.querySelector('.status-bar')).display})"
            )
            assert layout["scroll"] <= layout["width"] and layout["form"] > 0
            assert layout["bar"] != "none" and page.locator("#form .field").count() == 4
            white_space = page.locator("#item .text").first.evaluate(
                "e => getComputedStyle(e).whiteSpace"
            )
            assert white_space == "pre-wrap"
            if i == len(HOSTILE) - 1:
                page.screenshot(path=str(screenshot_dir / "label-long-word.png"), full_page=True)
        # s skips: the item is not served to this labeler again.
        page.keyboard.press("s")
        expect(page.locator("#progress")).to_contain_text(f"{len(seen)} skipped")
    assert sorted(seen) == list(range(10))
    assert dialogs == []
    assert page.evaluate("window.__pwned") is None
    assert aborted_requests == []


def test_an_admin_starts_a_queue_from_the_page(
    served_app: ServedApp, page: Any, aborted_requests: list[str]
) -> None:
    seed_results(served_app.db_path)
    page.goto(served_app.login_url(served_app.token("admin", "ann")))
    page.wait_for_url(f"{served_app.url}/")
    page.goto(f"{served_app.url}/label")
    page.fill("#na-card", "reference@1")
    page.fill("#na-model", MODEL)
    page.fill("#na-n", "4")
    page.fill("#na-wanted", "2")
    page.fill("#na-labelers", "bob, carol")
    page.click("#new-audit button[type=submit]")
    page.wait_for_selector("table.queues")
    assert page.url == f"{served_app.url}/label"
    row = page.locator("table.queues tbody tr")
    assert row.count() == 1 and "not for you" in row.inner_text()
    with open_store(served_app.db_path) as store:
        stored = store.query("SELECT audit_id, labels_wanted, labelers FROM label_queues")
    assert stored == [(1, 2, '["bob", "carol"]')]
    # Not one of the queue's labelers, the admin gets the same answer as for a missing audit.
    page.goto(f"{served_app.url}/label/1")
    assert "no audit" in page.locator("main").inner_text()
    # A refused request is shown on the form, nothing created.
    page.goto(f"{served_app.url}/label")
    page.fill("#na-card", "reference@1")
    page.fill("#na-model", "openai:nothing-stored")
    page.click("#new-audit button[type=submit]")
    expect(page.locator("#new-audit-message")).to_contain_text("no successful results")
    assert aborted_requests == []


def test_the_form_shows_the_cards_anchors_and_the_reveal_comes_into_view(
    served_app: ServedApp, page: Any, aborted_requests: list[str], screenshot_dir: Path
) -> None:
    """Issue 22 item 22: the scale read ``1 · 1 … 5 · 5`` with no words, and at 1280x900
    the reveal panel opened below the fold so the page looked unchanged after Enter."""
    seed_results(served_app.db_path)
    admin = served_app.token("admin", "ann")
    created = httpx.post(
        f"{served_app.url}/v1/audits",
        headers=served_app.headers(admin),
        json={"card": "reference@1", "model": MODEL, "n": 10, "seed": 3},
    )
    audit_id = created.json()["audit_id"]
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(served_app.login_url(served_app.token("labeler", "dee")))
    page.wait_for_url(f"{served_app.url}/")
    page.goto(f"{served_app.url}/label/{audit_id}")
    page.wait_for_selector("#labeling[data-state=label]")
    while question_number(page) != len(HOSTILE) - 1:  # its long output pushes the form down
        page.keyboard.press("s")
        page.wait_for_selector("#labeling[data-state=label]")
    correctness = page.locator('#form .field[data-field="correctness"]')
    expect(correctness.locator(".choice").nth(4)).to_contain_text("no factual error")
    expect(correctness.locator(".choice").nth(0)).to_contain_text("the main answer is wrong")
    expect(correctness).to_contain_text("Factual agreement with the gold answer")
    completeness = page.locator('#form .field[data-field="completeness"]')
    expect(completeness.locator(".choice").nth(3)).to_contain_text("all but a minor one")
    style = page.locator('#form .field[data-field="style_fidelity"]')
    expect(style.locator(".choice").nth(0)).to_contain_text("worst")
    expect(style.locator(".choice").nth(4)).to_contain_text("best")
    page.screenshot(path=str(screenshot_dir / "label-anchors.png"))
    for key in ("1", "5", "5", "5"):
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector("#labeling[data-state=reveal]")
    box = page.locator("#reveal")
    expect(box).to_be_in_viewport()
    top = box.evaluate("e => e.getBoundingClientRect().top")
    assert 0 <= top < 900
    page.screenshot(path=str(screenshot_dir / "label-reveal-1280x900.png"))
    assert aborted_requests == []
