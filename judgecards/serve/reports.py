"""Reports on the server: ``/reports``, ``/reports/{card}/{model}``, ``GET /v1/audits/{id}/report``.

Admin tokens only, pages and JSON alike: a report holds the judge's verdicts and every labeler's
labels, and a labeler who saw them would stop labelling blind. The pages are the same views as
``judgecards report`` (`judgecards.report.views`, rendered by `judgecards.report.html`) inside
the server's ``base.html``: plots are inline SVG with presentation attributes instead of
``style`` (`judgecards.report.svg`), so the Content-Security-Policy (``style-src 'self'``) leaves
them intact, and the stylesheet is ``/static/report.css``. The index reads only the cached
calibration headlines; a judge's page computes its report on request (bootstrap intervals: a
few seconds on a large audit), in the thread pool.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse

from judgecards.errors import EstimateError, ReportError
from judgecards.serve.api_errors import ApiError, ErrorResponse
from judgecards.serve.auth import AdminUser
from judgecards.serve.pages import render
from judgecards.serve.report_models import AuditReportOut, audit_report_out
from judgecards.storage import Store

__all__ = ["router"]

router = APIRouter()

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse} for status in (401, 403, 404, 422)
}


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _resamples(request: Request) -> int:
    return int(request.app.state.settings.get("report_resamples", 2000))


def report_link(card: str, model: str) -> str:
    """The page of one card version and judge model (each part quoted; a model may hold ``/``)."""
    return f"/reports/{quote(card, safe='@')}/{quote(model, safe=':')}"


@router.get("/reports", response_class=HTMLResponse, include_in_schema=False)
def reports_index(request: Request, principal: AdminUser) -> HTMLResponse:
    from calibration.audits import calibrations
    from judgecards.report.model import stored_judges

    store = _store(request)
    latest = {(s.card, s.model): s for s in calibrations(store)}
    rows = [
        {
            "card": card,
            "model": model,
            "link": report_link(card, model),
            "calibration": latest[(card, model)].describe() if (card, model) in latest else None,
        }
        for card, model in stored_judges(store)
    ]
    return render(request, "reports.html", {"title": "Reports · judgecards", "judges": rows})


@router.get("/reports/{card}/{model:path}", response_class=HTMLResponse, include_in_schema=False)
def judge_report_page(
    request: Request, principal: AdminUser, card: str, model: str
) -> HTMLResponse:
    from judgecards.report.html import render_sections
    from judgecards.report.model import build_report
    from judgecards.report.views import judge_views, plot_count

    if "@" not in card:
        raise ApiError(
            404, "not_found", f"no report for card {card!r}: give NAME@VERSION", field="path.card"
        )
    try:
        report = build_report(
            _store(request), card=card, model=model, n_resamples=_resamples(request)
        )
    except ReportError as error:
        raise ApiError(404, "not_found", str(error), field="path.card") from None
    views = judge_views(report)
    return render(
        request,
        "report_page.html",
        {
            "title": f"{card} · {model} · judgecards",
            "card": card,
            "model": model,
            "n_plots": plot_count(views),
            "level": round(report.level * 100),
            "resamples": report.n_resamples,
            "min_kappa": f"{report.min_kappa:.2f}",
            "body": render_sections(views, contents=False),
        },
    )


@router.get(
    "/v1/audits/{audit_id}/report",
    response_model=AuditReportOut,
    responses=_ERRORS,
    tags=["reports"],
    summary="One audit against people, with its judge's corrected estimates (admin only)",
)
def audit_report(
    request: Request, principal: AdminUser, audit_id: int = Path(ge=1, le=2**62)
) -> AuditReportOut:
    from calibration.audits import Audit
    from calibration.estimates import estimate

    store = _store(request)
    with Audit(store, n_resamples=_resamples(request)) as audits:
        record = audits.repository.audit(audit_id)
        if record is None:
            raise ApiError(404, "not_found", f"no audit #{audit_id}", field="path.audit_id")
        summary = audits.summary(audit_id)
    try:
        estimates, note = estimate(store, card=record.card, model=record.model), None
    except EstimateError as error:
        estimates, note = None, str(error)
    return audit_report_out(summary, estimates, note)
