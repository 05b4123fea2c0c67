"""`latest_calibration`: cheap, safe on any database, and what `warn_if_uncalibrated` reads."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration.audits import Audit, calibrations, latest_calibration, warn_if_uncalibrated
from judgecards.cli import cli
from judgecards.errors import UncalibratedJudgeWarning
from judgecards.judging import Judge
from judgecards.storage import Store
from tests.builders import MODEL, REPO, T0, VERDICTS, labelled_audit


def test_a_database_without_calibration_tables_is_simply_uncalibrated(tmp_path: Path) -> None:
    store = Store(tmp_path / "plain.db")
    assert latest_calibration(store, card="reference@1", model=MODEL) is None
    assert "audits" not in store.tables()  # asking created nothing
    missing = tmp_path / "missing.db"
    assert calibrations(missing) == [] and not missing.exists()  # listing never creates a file


def test_importing_calibration_status_stays_light() -> None:
    # Judge imports calibration.audits.status on every construction; numpy, scipy and scikit-learn
    # must wait until a measure is actually used.
    code = (
        "import sys, calibration, calibration.audits.status\n"
        "heavy = [m for m in ('numpy', 'scipy', 'sklearn') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_latest_calibration_is_the_newest_labelled_audit(tmp_path: Path) -> None:
    api = Audit(tmp_path / "s.db", n_resamples=200)
    verdicts = [VERDICTS[i % 3] for i in range(30)]
    first = labelled_audit(
        api,
        tmp_path,
        verdicts,
        {f"a{i:03d}": v for i, v in enumerate(verdicts)},
        prefix="a",
        created_at=T0,
    )
    human = {f"b{i:03d}": (VERDICTS[(i + 1) % 3] if i < 6 else v) for i, v in enumerate(verdicts)}
    second = labelled_audit(
        api, tmp_path, verdicts, human, prefix="b", created_at=T0 + timedelta(days=1)
    )
    status = latest_calibration(api.store, card="reference@1", model=MODEL)
    assert status is not None
    assert (status.audit_id, status.card, status.model, status.field, status.n) == (
        second,
        "reference@1",
        MODEL,
        "verdict",
        30,
    )
    # 6 of 30 disagree: kappa = (0.8 - 1/3) / (2/3) = 0.7
    assert status.kappa == pytest.approx(0.7)
    assert status.kappa_low is not None and status.kappa_high is not None
    assert status.kappa_low < 0.7 < status.kappa_high
    assert status.agreement == pytest.approx(0.8)
    assert status.date == api.get(second).created_at
    assert "kappa 0.700" in status.describe() and f"audit #{second}" in status.describe()
    assert latest_calibration(api.store, card="reference@1", model="openai:other") is None
    assert latest_calibration(api.store, card="reference@2", model=MODEL) is None
    listed = calibrations(tmp_path / "s.db")  # read-only, from the path
    assert [(c.card, c.model, c.audit_id) for c in listed] == [("reference@1", MODEL, second)]
    assert first != second
    started = time.perf_counter()
    for _ in range(200):
        latest_calibration(api.store, card="reference@1", model=MODEL)
    assert time.perf_counter() - started < 1.0  # one indexed query, no computation
    api.close()


def test_warns_until_the_judges_card_and_model_are_calibrated(tmp_path: Path) -> None:
    api = Audit(tmp_path / "j.db", n_resamples=200)
    judge = Judge("reference@1", MODEL, api_key="sk-test", db=api.store)  # the core never warns
    with pytest.warns(
        UncalibratedJudgeWarning, match="reference@1 has never been calibrated .* openai:gpt-4o"
    ):
        assert warn_if_uncalibrated(judge) is None
    verdicts = [VERDICTS[i % 3] for i in range(6)]
    labelled_audit(
        api,
        tmp_path,
        verdicts,
        {f"a{i:03d}": v for i, v in enumerate(verdicts)},
        prefix="a",
        created_at=T0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedJudgeWarning)
        status = warn_if_uncalibrated(judge)  # calibrated: silent
        assert status is not None and status.card == "reference@1"
        assert warn_if_uncalibrated(Judge("reference@1", "mock:judge", db=api.store)) is None
    with pytest.warns(UncalibratedJudgeWarning, match="openai:gpt-4o-mini"):
        warn_if_uncalibrated(
            Judge("reference@1", "openai:gpt-4o-mini", api_key="sk-test", db=api.store)
        )
    api.close()


def test_a_failed_latest_audit_warns_and_cards_list_says_so_per_model(tmp_path: Path) -> None:
    # Issue 22 item 14: after the gate failed (kappa < 0.6), score warned about nothing and
    # cards list showed "calibrated: kappa ..." as if the card version were calibrated.
    api = Audit(tmp_path / "f.db", n_resamples=200)
    verdicts = [VERDICTS[i % 3] for i in range(30)]
    wrong = {f"a{i:03d}": VERDICTS[(i + 1) % 3] for i in range(30)}  # people disagree throughout
    labelled_audit(api, tmp_path, verdicts, wrong, prefix="a", created_at=T0)
    status = latest_calibration(api.store, card="reference@1", model=MODEL)
    assert status is not None and status.kappa is not None and status.kappa < 0
    judge = Judge("reference@1", MODEL, api_key="sk-test", db=api.store)
    with pytest.warns(UncalibratedJudgeWarning) as caught:
        assert warn_if_uncalibrated(judge) == status
    (warning,) = caught
    assert f"reference@1 failed its latest calibration for {MODEL}: kappa -" in str(warning.message)
    api.close()

    listed = CliRunner().invoke(cli, ["cards", "list", "--db", str(tmp_path / "f.db")])
    assert listed.exit_code == 0, listed.output
    block = listed.output.split("reference@1", 1)[1].split("reference@2", 1)[0]
    assert f"{MODEL}: FAILED calibration, kappa -" in block
    assert "below the gate's kappa 0.60" in block and "calibrated:" not in block
    assert "not calibrated for any other judge model" in block
    # Another version of the card has no audit for any model.
    other = listed.output.split("reference@2", 1)[1].split("\n", 3)[1]
    assert "not calibrated for any judge model" in other
