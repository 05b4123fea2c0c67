"""The labelling routes over HTTP (a real uvicorn on loopback, httpx as the client).

Roles, blindness through every labelling route, the error shape with the field at fault,
CSRF on cookie requests, and the audit's cached headline refreshed after labels.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from calibration.audits import latest_calibration
from calibration.labels import open_store
from tests.builders import LABELING_JUDGE as JUDGE
from tests.builders import MODEL, SECRET_REASON, ServedApp, pairwise_results, wait_for
from tests.builders import seed_labeling_results as seed_results

LABEL = {"verdict": "match", "correctness": 5, "completeness": 5, "style_fidelity": 5}


def start(served_app: ServedApp, **settings: Any) -> tuple[httpx.Client, int, str, str]:
    seed_results(served_app.db_path)
    admin = served_app.token("admin", "ann")
    labeler = served_app.token("labeler", "bob")
    body = {"card": "reference@1", "model": MODEL, "n": 10, "seed": 3, **settings}
    created = httpx.post(
        f"{served_app.url}/v1/audits", json=body, headers=served_app.headers(admin), timeout=30
    )
    client = httpx.Client(base_url=served_app.url, timeout=30)
    assert created.status_code == 201, created.text
    return client, created.json()["audit_id"], admin, labeler


def test_a_labeler_fetches_inputs_and_forms_never_the_judge(served_app: ServedApp) -> None:
    client, audit_id, _admin, labeler = start(served_app)
    bob = served_app.headers(labeler)
    fetched: list[str] = []
    with client:
        listed = client.get("/v1/audits", headers=bob).json()["queues"]
        assert [(q["audit_id"], q["model"], q["kappa"]) for q in listed] == [(audit_id, None, None)]
        fetched.append(json.dumps(listed))
        for _ in range(10):
            served = client.post(f"/v1/audits/{audit_id}/next", headers=bob)
            fetched.append(served.text)
            item = served.json()["item"]
            assert set(item) == {"audit_id", "position", "card", "inputs", "fields", "reveal"}
            assert set(item["inputs"]) == {"question", "gold_answer", "model_output"}
            # Before bob's own label the judge's answer is a 404, like an item that is not there.
            early = client.get(f"/v1/audits/{audit_id}/items/{item['position']}/judge", headers=bob)
            assert early.status_code == 404
            fetched.append(early.text)
            fetched.append(client.get(f"/v1/audits/{audit_id}/progress", headers=bob).text)
            fetched.append(client.get(f"/label/{audit_id}", headers=bob).text)
            fetched.append(client.get("/label", headers=bob).text)
            stored = client.post(
                "/v1/labels",
                json={"audit_id": audit_id, "position": item["position"], "values": LABEL},
                headers=bob,
            )
            assert stored.status_code == 201
            fetched.append(stored.text)
        done = client.post(f"/v1/audits/{audit_id}/next", headers=bob).json()
        assert done["item"] is None and done["progress"]["done"] == 10
    text = "\n".join(fetched)
    assert SECRET_REASON not in text
    assert '"verdict": "mismatch"' not in text and '"verdict":"mismatch"' not in text


def test_only_admins_create_or_configure_queues(served_app: ServedApp) -> None:
    client, audit_id, admin, labeler = start(served_app)
    with client:
        body = {"card": "reference@1", "model": MODEL}
        assert (
            client.post("/v1/audits", json=body, headers=served_app.headers(labeler)).status_code
            == 403
        )
        configure = {"labels_wanted": 2, "labelers": ["carol"]}
        refused = client.post(
            f"/v1/audits/{audit_id}/queue", json=configure, headers=served_app.headers(labeler)
        )
        assert refused.status_code == 403
        ok = client.post(
            f"/v1/audits/{audit_id}/queue", json=configure, headers=served_app.headers(admin)
        )
        assert ok.status_code == 200 and ok.json()["labelers"] == ["carol"]
        # Not bob's queue any more: it is not listed and looks like no queue at all.
        assert client.get("/v1/audits", headers=served_app.headers(labeler)).json()["queues"] == []
        hidden = client.post(f"/v1/audits/{audit_id}/next", headers=served_app.headers(labeler))
        assert hidden.status_code == 404 and hidden.json()["error"]["field"] == "path.audit_id"
        assert (
            client.get(f"/label/{audit_id}", headers=served_app.headers(labeler)).status_code == 404
        )
        nothing = client.post(
            "/v1/audits", json={"card": "reference@1", "model": "openai:none"},
            headers=served_app.headers(admin),
        )  # fmt: skip
        assert nothing.status_code == 422 and nothing.json()["error"]["code"] == "nothing_to_sample"
        unknown = client.post(
            "/v1/audits", json={"card": "no-such-card", "model": MODEL},
            headers=served_app.headers(admin),
        )  # fmt: skip
        assert unknown.status_code == 422 and unknown.json()["error"]["field"] == "body.card"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"values": {**LABEL, "correctness": 7}}, 422, "body.values.correctness"),
        ({"values": {**LABEL, "verdict": "<script>"}}, 422, "body.values.verdict"),
        (
            {"values": {k: v for k, v in LABEL.items() if k != "verdict"}},
            422,
            "body.values.verdict",
        ),
        ({"values": {**LABEL, "extra": 1}}, 422, "body.values.extra"),
        ({"values": LABEL, "position": 99}, 404, "body.position"),
        ({"values": LABEL, "position": 0}, 422, "body.position"),
        ({"values": LABEL, "note": "x" * 2001}, 422, "body.note"),
        ({"values": LABEL, "labeler": "mallory"}, 422, "body.labeler"),
        ({"values": "match"}, 422, "body.values"),
    ],
)
def test_bad_labels_name_the_field_and_store_nothing(
    served_app: ServedApp, body: dict[str, Any], status: int, field: str
) -> None:
    client, audit_id, _admin, labeler = start(served_app)
    with client:
        item = client.post(f"/v1/audits/{audit_id}/next", headers=served_app.headers(labeler))
        sent = {"audit_id": audit_id, "position": item.json()["item"]["position"], **body}
        answer = client.post("/v1/labels", json=sent, headers=served_app.headers(labeler))
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["field"] == field
    with open_store(served_app.db_path) as store:
        assert store.query("SELECT count(*) FROM labels") == [(0,)]


def test_cookie_requests_need_the_csrf_header(served_app: ServedApp) -> None:
    client, audit_id, _admin, labeler = start(served_app)
    with client:
        assert client.post("/login", data={"token": labeler}).status_code == 303
        refused = client.post(f"/v1/audits/{audit_id}/next")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "csrf"
        page = client.get(f"/label/{audit_id}")
        token = page.text.split('name="csrf-token" content="')[1].split('"')[0]
        assert (
            client.post(f"/v1/audits/{audit_id}/next", headers={"X-CSRF-Token": token}).status_code
            == 200
        )


def test_labels_conflict_undo_skip_and_reveal(served_app: ServedApp) -> None:
    client, audit_id, _admin, labeler = start(served_app)
    bob = served_app.headers(labeler)
    with client:
        assert client.post(f"/v1/audits/{audit_id}/undo", headers=bob).status_code == 409
        item = client.post(f"/v1/audits/{audit_id}/next", headers=bob).json()["item"]
        body = {"audit_id": audit_id, "position": item["position"], "values": LABEL}
        assert client.post("/v1/labels", json=body, headers=bob).status_code == 201
        again = client.post("/v1/labels", json=body, headers=bob)
        assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
        answer = client.get(f"/v1/audits/{audit_id}/items/{item['position']}/judge", headers=bob)
        assert answer.status_code == 200 and answer.json()["yours"] == LABEL
        reveal = f"/v1/audits/{audit_id}/items/{item['position']}/reveal"
        bad = client.post(reveal, json={"reason": "bored"}, headers=bob)
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "body.reason"
        assert (
            client.post(reveal, json={"reason": "rubric_unclear"}, headers=bob).status_code == 204
        )
        # Once the judge's answer was shown the label stays (issue 22 item 1).
        kept = client.post(f"/v1/audits/{audit_id}/undo", headers=bob)
        assert kept.status_code == 409 and "revision" in kept.json()["error"]["message"]
        # A label undone before its reveal goes, with nothing left of it.
        second = client.post(f"/v1/audits/{audit_id}/next", headers=bob).json()["item"]
        body = {"audit_id": audit_id, "position": second["position"], "values": LABEL}
        assert client.post("/v1/labels", json=body, headers=bob).status_code == 201
        undone = client.post(f"/v1/audits/{audit_id}/undo", headers=bob).json()
        assert undone["position"] == second["position"] and undone["progress"]["done"] == 1
        skipped = client.post(
            f"/v1/audits/{audit_id}/skip", json={"position": second["position"]}, headers=bob
        )
        assert skipped.json()["skipped"] == 1
        nxt = client.post(f"/v1/audits/{audit_id}/next", headers=bob).json()["item"]
        assert nxt["position"] not in {item["position"], second["position"]}


def test_labels_refresh_the_cached_calibration(served_app: ServedApp) -> None:
    client, audit_id, _admin, labeler = start(served_app)
    bob = served_app.headers(labeler)
    truth = dict(zip((f"Question {i}?" for i in range(10)), JUDGE))
    scores = {"match": (5, 5), "partial_match": (3, 3), "mismatch": (1, 1)}
    with client:
        while item := client.post(f"/v1/audits/{audit_id}/next", headers=bob).json()["item"]:
            verdict = truth[item["inputs"]["question"]]
            values = {"verdict": verdict, "correctness": scores[verdict][0],
                      "completeness": scores[verdict][1], "style_fidelity": 5}  # fmt: skip
            body = {"audit_id": audit_id, "position": item["position"], "values": values}
            assert client.post("/v1/labels", json=body, headers=bob).status_code == 201
    status = None

    def refreshed() -> bool:
        nonlocal status
        with open_store(served_app.db_path) as store:
            status = latest_calibration(store, card="reference@1", model=MODEL)
        return status is not None and status.n == 10

    wait_for(refreshed, what="the calibration refreshed from the 10 labels", poll=0.2)
    assert status is not None and status.kappa == pytest.approx(1.0)


def test_pairwise_labels_posted_as_shown_are_stored_as_the_results_sides(
    served_app: ServedApp,
) -> None:
    with open_store(served_app.db_path) as store:
        pairwise_results(store, ["A"] * 6)
    admin = served_app.token("admin", "ann")
    with httpx.Client(base_url=served_app.url) as client:
        created = client.post(
            "/v1/audits", json={"card": "pairwise@1", "model": MODEL, "n": 6, "labels_wanted": 3},
            headers=served_app.headers(admin),
        )  # fmt: skip
        audit_id = created.json()["audit_id"]
        for name in ("x", "y", "z"):
            who = served_app.headers(served_app.token("labeler", name))
            while item := client.post(f"/v1/audits/{audit_id}/next", headers=who).json()["item"]:
                assert [f["choices"] for f in item["fields"]] == [["A", "B", "tie"]]
                # This person always prefers the "left" answer, wherever it was shown.
                shown_first = item["inputs"]["answer_a"].startswith("left")
                body = {"audit_id": audit_id, "position": item["position"],
                        "values": {"winner": "A" if shown_first else "B"}}  # fmt: skip
                assert client.post("/v1/labels", json=body, headers=who).status_code == 201
    with open_store(served_app.db_path) as store:
        values = store.query("SELECT value, count(*) FROM labels GROUP BY value")
        swapped = store.query("SELECT sum(swapped), count(*) FROM queue_sides")
    assert values == [('"A"', 18)]
    assert swapped[0][1] == 18 and 0 < swapped[0][0] < 18
    # People who always pick the same answer chose the one shown second as often as it was.
    with httpx.Client(base_url=served_app.url) as client:
        url = f"/v1/audits/{audit_id}/position-preference"
        preference = client.get(url, headers=served_app.headers(admin)).json()
        labeler = served_app.headers(served_app.token("labeler", "w"))
        assert client.get(url, headers=labeler).status_code == 403
    assert (
        preference["second"] == swapped[0][0] and preference["first"] + preference["second"] == 18
    )
    assert preference["low"] <= preference["share_first"] <= preference["high"]


def _judge_values(answer: dict[str, Any]) -> dict[str, Any]:
    return {**LABEL, **answer["judge"]}


def test_a_label_given_before_the_reveal_stays_and_corrections_are_marked_revisions(
    served_app: ServedApp, tmp_path: Any
) -> None:
    """Issue 22 item 1: label, GET the judge's answer, undo, relabel with the judge's answer
    made every item agree (kappa 1.000, gate passed). Now undo is refused after the reveal,
    a correction is a marked revision, and `audit report` reads the blind labels unless
    asked (--with-revisions)."""
    from click.testing import CliRunner

    from judgecards.cli import cli

    client, audit_id, _admin, labeler = start(served_app)
    bob = served_app.headers(labeler)
    blind = {"verdict": "mismatch", "correctness": 1, "completeness": 1, "style_fidelity": 1}
    with client:
        while item := client.post(f"/v1/audits/{audit_id}/next", headers=bob).json()["item"]:
            position = item["position"]
            body = {"audit_id": audit_id, "position": position, "values": blind}
            assert client.post("/v1/labels", json=body, headers=bob).status_code == 201
            answer = client.get(f"/v1/audits/{audit_id}/items/{position}/judge", headers=bob)
            assert answer.status_code == 200
            undo = client.post(f"/v1/audits/{audit_id}/undo", headers=bob)
            assert undo.status_code == 409, undo.text
            assert undo.json()["error"]["code"] == "conflict"
            relabel = {**body, "values": _judge_values(answer.json())}
            assert client.post("/v1/labels", json=relabel, headers=bob).status_code == 409
            revised = client.post(
                f"/v1/audits/{audit_id}/items/{position}/revision",
                json={"values": _judge_values(answer.json()), "note": "saw the judge"},
                headers=bob,
            )
            assert revised.status_code == 201, revised.text
            assert revised.json() == {
                "position": position,
                "stored": 4,
                "revised_after_reveal": True,
            }
        # A revision before any reveal is refused: that is what undo is for.
        other = served_app.headers(served_app.token("labeler", "cy"))
        early = client.post(
            f"/v1/audits/{audit_id}/items/1/revision", json={"values": LABEL}, headers=other
        )
        assert early.status_code == 409
    with open_store(served_app.db_path) as store:
        stored = store.query("SELECT DISTINCT value FROM labels WHERE field = 'verdict'")
        marks = store.query(
            "SELECT count(*), count(DISTINCT result_id), min(revealed_at IS NOT NULL) "
            "FROM label_revisions WHERE labeler = 'bob'"
        )
        shown = store.query("SELECT count(*) FROM queue_disclosures WHERE labeler = 'bob'")
    assert stored == [('"mismatch"',)]  # every blind label kept as given
    assert marks == [(40, 10, 1)] and shown == [(10,)]
    runner = CliRunner()
    args = ["audit", "report", "--db", str(served_app.db_path), "--json", "--resamples", "200"]
    blind_report = runner.invoke(cli, args)
    assert blind_report.exit_code == 1, blind_report.output  # the gate fails on the blind labels
    data = json.loads(blind_report.stdout)
    assert data["audits"][0]["kappa"]["value"] < 0.6
    asked = runner.invoke(cli, [*args, "--with-revisions"])
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["audits"][0]["kappa"]["value"] == pytest.approx(1.0)


def test_a_labeler_may_label_only_what_was_served_to_them(served_app: ServedApp) -> None:
    """Issue 22 item 2: any position was accepted, held or finished by another (201)."""
    client, audit_id, _admin, labeler = start(served_app, labels_wanted=1)
    bob = served_app.headers(labeler)
    cy = served_app.headers(served_app.token("labeler", "cy"))
    with client:
        held = client.post(f"/v1/audits/{audit_id}/next", headers=bob).json()["item"]["position"]
        finished = held
        body = {"audit_id": audit_id, "position": held, "values": LABEL}
        # Held by bob: cy may not label it, nor see its judge answer through a label.
        refused = client.post("/v1/labels", json=body, headers=cy)
        assert refused.status_code == 409, refused.text
        judge = f"/v1/audits/{audit_id}/items/{held}/judge"
        assert client.get(judge, headers=cy).status_code == 404
        assert client.post("/v1/labels", json=body, headers=bob).status_code == 201
        # Finished by bob.
        assert client.post("/v1/labels", json=body, headers=cy).status_code == 409
        # Never served to anyone: still not cy's to label.
        never = {**body, "position": 9 if finished != 9 else 8}
        assert client.post("/v1/labels", json=never, headers=cy).status_code == 409
        mine = client.post(f"/v1/audits/{audit_id}/next", headers=cy).json()["item"]
        assert mine["position"] != finished
        ok = {**body, "position": mine["position"]}
        assert client.post("/v1/labels", json=ok, headers=cy).status_code == 201
    with open_store(served_app.db_path) as store:
        per_item = store.query(
            "SELECT result_id, count(DISTINCT labeler) FROM labels GROUP BY result_id"
        )
    assert len(per_item) == 2 and all(n == 1 for _, n in per_item)
