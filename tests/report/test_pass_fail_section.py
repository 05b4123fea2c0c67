"""The HTML report shows the pass/fail view of a two-valued judge's newest labelled audit."""

from __future__ import annotations

import json
from pathlib import Path

from calibration import Audit
from judgecards.report import build_report, render_html
from judgecards.storage import Store
from tests.builders import pass_fail_judged as judged


def test_the_report_has_a_pass_fail_section(tmp_path: Path) -> None:
    db, human = judged(tmp_path)
    with Store(db) as store:
        with Audit(store) as audit:
            audit.sample(
                card="pass-fail@1", model="openai:judge", n=100, seed=4, sheet=tmp_path / "s.jsonl"
            )
            rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
            (tmp_path / "s.jsonl").write_text(
                "".join(json.dumps({**r, "verdict": human[r["result_id"]]}) + "\n" for r in rows)
            )
            audit.ingest(tmp_path / "s.jsonl", labeler="ann")
            view = audit.report(card="pass-fail").audits[0].pass_fail
        page = render_html(build_report(store, n_resamples=200))
    assert view is not None and view.corrected is not None
    assert 'class="part part-pass-fail"' in page
    assert "Pass/fail view: audit #1, verdict" in page
    assert "of the answers people failed, the judge failed" in page
    tpr = f"{view.rates.tpr.value:.3f} [{view.rates.tpr.low:.3f}, {view.rates.tpr.high:.3f}]"
    assert tpr in page
    assert "share fail: Rogan–Gladen" in page
