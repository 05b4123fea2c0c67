"""Blind labelling in the browser: the queue pages and their JSON routes.

Pages: ``/label`` lists the queues the token may label (admins also start new ones there);
``/label/{audit_id}`` is the keyboard-first labelling page. Both pages are shells: the item is
fetched by ``/static/label.js`` as JSON and put on the page with ``textContent`` only, so
nothing from an item is ever parsed as HTML, and the page's HTML holds no item at all.

JSON (`calibration.audits.queue` does the work; bodies in `judgecards.serve.labeling_models`):

* ``GET /v1/audits`` — labelers: the queues that are for them, with their progress; admins:
  every audit with its settings, judge model and cached kappa.
* ``POST /v1/audits`` (admin) — draw a new audit like ``audit sample`` and serve it;
  ``POST /v1/audits/{id}/queue`` (admin) — change how an existing audit is served.
* ``POST /v1/audits/{id}/next`` — the item to label now, reserved to the caller (a POST: it
  takes a reservation); ``/undo``, ``/skip``; ``GET /v1/audits/{id}/progress``.
* ``POST /v1/labels`` — store a blind label (`LabelIn`) of the item ``next`` served the caller
  (any other position: 409).
* ``GET /v1/audits/{id}/items/{position}/judge`` — the judge's answer, only once the caller's
  own label of that item is stored (before: 404, as for an item that does not exist). Showing
  it is recorded: from then on ``undo`` of that label is refused (409);
  ``POST .../reveal`` — why they differ, stored apart from the labels;
  ``POST .../revision`` — a correction after the reveal (`RevisionIn`), stored as a marked
  revision that agreement and kappa use only when asked.
* ``GET /v1/audits/{id}/position-preference`` (admin) — how often people chose the pairwise
  answer shown first.

The labeler is always the token's name. Every state-changing route takes `csrf_protect`.
After a label or an undo the audit's cached headline (what ``cards list`` and
`latest_calibration` read) is recomputed in a background thread two seconds later, once for
every burst of labels.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import HTMLResponse

from calibration.audits import LabelQueue, LabelQueueError
from judgecards.errors import AuditError, CardError, StoreError
from judgecards.serve.api_errors import ApiError, ErrorResponse
from judgecards.serve.auth import AdminUser, AnyUser, Principal, csrf_protect
from judgecards.serve.labeling_models import (
    AuditIn,
    ItemOut,
    JudgeAnswerOut,
    LabelIn,
    LabelOut,
    NextOut,
    PositionPreferenceOut,
    ProgressOut,
    QueueOut,
    QueueSettingsIn,
    QueuesOut,
    RevealIn,
    RevisionIn,
    RevisionOut,
    SkipIn,
    UndoOut,
)
from judgecards.serve.pages import render

__all__ = ["router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse} for status in (401, 403, 404, 409, 422)
}
router = APIRouter(responses=_ERRORS)
_STATUS = {"not_found": 404, "conflict": 409, "invalid": 422, "missing": 422}
_REFRESH_DELAY_S = 2.0
_lock = threading.Lock()
_log = logging.getLogger("judgecards.serve")

AuditId = Path(ge=1, le=2**62)


def _queue(request: Request) -> LabelQueue:
    """The app's one `LabelQueue` (its card cache is shared by every request)."""
    with _lock:
        queue = getattr(request.app.state, "label_queue", None)
        if queue is None:
            settings: dict[str, Any] = request.app.state.settings
            queue = LabelQueue(request.app.state.store, cards_dir=settings.get("cards_dir"))
            request.app.state.label_queue = queue
        return queue


def _failed(error: LabelQueueError) -> ApiError:
    field = error.field
    if field is not None and not field.startswith(("body.", "path.")):
        field = f"{'path' if field == 'audit_id' else 'body'}.{field}"
    return ApiError(_STATUS[error.code], error.code, str(error), field=field)


def _refresh_soon(request: Request, audit_id: int) -> None:
    """Recompute the audit's cached headline a moment after its labels change.

    One pending refresh per audit: labels arriving meanwhile are covered by it, and a label
    stored while it runs schedules the next, so the cache always ends up current.
    """
    state = request.app.state
    with _lock:
        pending: set[int] = state.__dict__.setdefault("label_refresh_pending", set())
        if audit_id in pending:
            return
        pending.add(audit_id)

    def run() -> None:
        with _lock:
            pending.discard(audit_id)
        _refresh(state.store, state.settings.get("cards_dir"), audit_id)

    timer = threading.Timer(_REFRESH_DELAY_S, run)
    timer.daemon = True
    timer.start()


def _refresh(store: Any, cards_dir: Any, audit_id: int) -> None:
    from calibration.audits import Audit

    try:
        Audit(store, cards_dir=cards_dir, n_resamples=500).refresh(audit_id)
    except (AuditError, StoreError, CardError) as error:
        # Only a cache (`audit report` computes from the labels themselves); a closed store
        # after shutdown lands here too.
        _log.info("headline of audit #%s not refreshed: %s", audit_id, error)
    except Exception:  # a background thread: nobody else would ever see it
        _log.exception("headline of audit #%s not refreshed", audit_id)


# --------------------------------------------------------------------------- pages


@router.get("/label", response_class=HTMLResponse, include_in_schema=False)
def label_index(request: Request, principal: AnyUser) -> HTMLResponse:
    admin = principal.role == "admin"
    queues = [
        QueueOut.of(s, admin=admin, mine=s.settings.admits(principal.name))
        for s in _queue(request).queues(principal.name, every=admin)
    ]
    return render(
        request, "label_index.html", {"title": "Labeling queues", "queues": queues, "admin": admin}
    )


@router.get("/label/{audit_id}", response_class=HTMLResponse, include_in_schema=False)
def label_page(request: Request, principal: AnyUser, audit_id: int = AuditId) -> HTMLResponse:
    try:
        _queue(request).progress(audit_id, principal.name)
    except LabelQueueError as error:
        raise _failed(error) from error
    return render(request, "label.html", {"title": f"Audit #{audit_id}", "audit_id": audit_id})


# --------------------------------------------------------------------------- queues


@router.get("/v1/audits", response_model=QueuesOut, tags=["labeling"])
def list_audits(request: Request, principal: AnyUser) -> QueuesOut:
    """Labelers: the queues that are for them. Admins: every audit."""
    admin = principal.role == "admin"
    summaries = _queue(request).queues(principal.name, every=admin)
    return QueuesOut(
        queues=[
            QueueOut.of(s, admin=admin, mine=s.settings.admits(principal.name)) for s in summaries
        ]
    )


@router.post(
    "/v1/audits",
    response_model=QueueOut,
    status_code=201,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def create_audit(body: AuditIn, request: Request, principal: AdminUser) -> QueueOut:
    """Draw a new audit like ``judgecards audit sample`` and serve it as a queue."""
    queue = _queue(request)
    try:
        settings = queue.create(
            card=body.card,
            model=body.model,
            n=body.n,
            seed=body.seed,
            strategy=body.strategy,
            labels_wanted=body.labels_wanted,
            reserve_seconds=body.reserve_seconds,
            labelers=body.labelers,
            reveal=body.reveal,
        )
    except CardError as error:
        raise ApiError(422, "card", str(error), field="body.card") from error
    except LabelQueueError as error:
        raise _failed(error) from error
    except AuditError as error:
        raise ApiError(422, "nothing_to_sample", str(error), field="body.card") from error
    return _one(queue, settings.audit_id, principal)


@router.post(
    "/v1/audits/{audit_id}/queue",
    response_model=QueueOut,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def configure_audit(
    body: QueueSettingsIn, request: Request, principal: AdminUser, audit_id: int = AuditId
) -> QueueOut:
    """Change how an existing audit is served (labels per item, hold time, who, reveal)."""
    queue = _queue(request)
    try:
        queue.open(
            audit_id,
            labels_wanted=body.labels_wanted,
            reserve_seconds=body.reserve_seconds,
            labelers=body.labelers,
            reveal=body.reveal,
        )
    except LabelQueueError as error:
        raise _failed(error) from error
    return _one(queue, audit_id, principal)


@router.get(
    "/v1/audits/{audit_id}/position-preference",
    response_model=PositionPreferenceOut,
    tags=["labeling"],
)
def position_preference(
    request: Request, principal: AdminUser, audit_id: int = AuditId
) -> PositionPreferenceOut:
    """Admin: how often people chose the pairwise answer shown first (human position bias)."""
    queue = _queue(request)
    try:
        queue.settings(audit_id)
    except LabelQueueError as error:
        raise _failed(error) from error
    return PositionPreferenceOut.of(queue.position_preference(audit_id))


def _one(queue: LabelQueue, audit_id: int, principal: Principal) -> QueueOut:
    summary = next(s for s in queue.queues(every=True) if s.audit.id == audit_id)
    return QueueOut.of(summary, admin=True, mine=False)


# --------------------------------------------------------------------------- labelling


@router.post(
    "/v1/audits/{audit_id}/next",
    response_model=NextOut,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def next_item(request: Request, principal: AnyUser, audit_id: int = AuditId) -> NextOut:
    """The item to label now, held for the caller (the same one again until labelled)."""
    queue = _queue(request)
    try:
        item = queue.next(audit_id, principal.name)
        progress = item.progress if item else queue.progress(audit_id, principal.name)
    except LabelQueueError as error:
        raise _failed(error) from error
    return NextOut(
        item=None if item is None else ItemOut.of(item), progress=ProgressOut.of(progress)
    )


@router.get("/v1/audits/{audit_id}/progress", response_model=ProgressOut, tags=["labeling"])
def progress(request: Request, principal: AnyUser, audit_id: int = AuditId) -> ProgressOut:
    try:
        return ProgressOut.of(_queue(request).progress(audit_id, principal.name))
    except LabelQueueError as error:
        raise _failed(error) from error


@router.post(
    "/v1/labels",
    response_model=LabelOut,
    status_code=201,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def add_label(body: LabelIn, request: Request, principal: AnyUser) -> LabelOut:
    """Store the caller's blind label of one item (into ``labels``, ``source = serve``)."""
    try:
        done = _queue(request).submit(
            body.audit_id, principal.name, body.position, body.values, note=body.note
        )
    except LabelQueueError as error:
        raise _failed(error) from error
    _refresh_soon(request, body.audit_id)
    return LabelOut(progress=ProgressOut.of(done))


@router.post(
    "/v1/audits/{audit_id}/undo",
    response_model=UndoOut,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def undo(request: Request, principal: AnyUser, audit_id: int = AuditId) -> UndoOut:
    """Remove the caller's newest label in this queue; ``next`` serves that item again."""
    queue = _queue(request)
    try:
        position = queue.undo(audit_id, principal.name)
        done = queue.progress(audit_id, principal.name)
    except LabelQueueError as error:
        raise _failed(error) from error
    _refresh_soon(request, audit_id)
    return UndoOut(position=position, progress=ProgressOut.of(done))


@router.post(
    "/v1/audits/{audit_id}/skip",
    response_model=ProgressOut,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def skip(
    body: SkipIn, request: Request, principal: AnyUser, audit_id: int = AuditId
) -> ProgressOut:
    """Never serve this item to the caller again (others get it at once)."""
    try:
        return ProgressOut.of(_queue(request).skip(audit_id, principal.name, body.position))
    except LabelQueueError as error:
        raise _failed(error) from error


@router.get(
    "/v1/audits/{audit_id}/items/{position}/judge",
    response_model=JudgeAnswerOut,
    tags=["labeling"],
)
def judge_answer(
    request: Request, principal: AnyUser, audit_id: int = AuditId, position: int = Path(ge=1)
) -> JudgeAnswerOut:
    """The judge's answer on an item, only after the caller's own label of it is stored."""
    try:
        return JudgeAnswerOut.of(_queue(request).judge_answer(audit_id, principal.name, position))
    except LabelQueueError as error:
        raise _failed(error) from error


@router.post(
    "/v1/audits/{audit_id}/items/{position}/reveal",
    status_code=204,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def reveal(
    body: RevealIn,
    request: Request,
    principal: AnyUser,
    audit_id: int = AuditId,
    position: int = Path(ge=1),
) -> None:
    """Why the caller's label differs from the judge's: stored apart, never used in kappa."""
    try:
        _queue(request).explain(audit_id, principal.name, position, body.reason, note=body.note)
    except LabelQueueError as error:
        raise _failed(error) from error


@router.post(
    "/v1/audits/{audit_id}/items/{position}/revision",
    response_model=RevisionOut,
    status_code=201,
    tags=["labeling"],
    dependencies=[Depends(csrf_protect)],
)
def revise(
    body: RevisionIn,
    request: Request,
    principal: AnyUser,
    audit_id: int = AuditId,
    position: int = Path(ge=1),
) -> RevisionOut:
    """A correction after the judge's answer was shown: kept apart, the blind label stays."""
    try:
        stored = _queue(request).revise(
            audit_id, principal.name, position, body.values, note=body.note
        )
    except LabelQueueError as error:
        raise _failed(error) from error
    return RevisionOut(position=position, stored=stored)
