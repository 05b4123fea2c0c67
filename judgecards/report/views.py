"""What a report page shows: the model's numbers as parts with plots and the tables beside them.

Every plot here is drawn from exactly the numbers of its table (`Plot.table`), so a reader who
cannot see the picture, or does not trust it, reads the same thing. A part with nothing to show
says so in words (`Part.empty`) instead of drawing an empty axis. Both the saved file and the
served pages render these views, so they show the same report.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from calibration.estimates import EstimateRow, interval_notes
from calibration.stats import PassFailView
from judgecards.limits import format_cost
from judgecards.metrics.stats import Estimate
from judgecards.report import plots
from judgecards.report.model import JudgeReport, Report, ShownDisagreement

__all__ = ["JudgeView", "Part", "Plot", "Table", "judge_view", "judge_views"]


@dataclass(frozen=True)
class Table:
    """A table of formatted cells."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class Plot:
    """A plot (inline SVG) and the table of the numbers it draws."""

    key: str
    title: str
    svg: str
    table: Table


@dataclass(frozen=True)
class Part:
    """A subsection: lead sentences, plots with their tables, more tables, or why it is empty."""

    key: str
    heading: str
    lead: tuple[str, ...] = ()
    plots: tuple[Plot, ...] = ()
    tables: tuple[Table, ...] = ()
    empty: str | None = None


@dataclass(frozen=True)
class JudgeView:
    """One card@version × judge model section."""

    anchor: str
    card: str
    model: str
    summary: tuple[str, ...]
    parts: tuple[Part, ...]
    disagreements: tuple[ShownDisagreement, ...]

    @property
    def n_plots(self) -> int:
        return sum(len(part.plots) for part in self.parts)


def judge_views(report: Report) -> list[JudgeView]:
    """One view per judge section of the report."""
    return [judge_view(judge, report) for judge in report.judges]


def anchor_of(card: str, model: str) -> str:
    """An HTML id for a section: readable, and unique through a short hash of the exact names."""
    readable = re.sub(r"[^A-Za-z0-9]+", "-", f"{card}-{model}").strip("-").lower()[:48]
    digest = hashlib.sha256(f"{card}\0{model}".encode()).hexdigest()[:8]
    return f"j-{readable}-{digest}"


def judge_view(judge: JudgeReport, report: Report) -> JudgeView:
    """The parts of one judge's section, corrected estimates first when people labelled."""
    anchor = anchor_of(judge.card, judge.model)
    pct = f"{round(report.level * 100)}%"
    summary = [
        f"{judge.n_results} stored results"
        + (f" ({judge.n_errors} error records)" if judge.n_errors else ""),
    ]
    if judge.estimates is not None:
        summary.append(
            "Corrected estimates lead (PPI++, from "
            f"{judge.estimates.n_labeled} human-labelled items); the judge's own numbers further "
            "down (score distributions, win rates) are uncorrected."
        )
    else:
        summary.append(
            "No corrected estimates: every number of the judge's own below (score "
            "distributions, win rates) is uncorrected."
        )
    parts = [
        _estimates(judge, anchor, pct),
        _over_time(judge, anchor, report.min_kappa, pct),
        *_latest(judge, anchor, pct),
        _pairwise(judge, anchor, pct, corrected=judge.estimates is not None),
        _distributions(judge, anchor, corrected=judge.estimates is not None),
        _costs(judge, anchor),
    ]
    return JudgeView(
        anchor, judge.card, judge.model, tuple(summary), tuple(parts), judge.disagreements
    )


# --------------------------------------------------------------------------- parts


def _estimates(judge: JudgeReport, anchor: str, pct: str) -> Part:
    lead = (judge.guarantee,)
    report = judge.estimates
    if report is None:
        return Part(
            "estimates",
            "Corrected estimates",
            lead,
            empty=f"No corrected estimates: {judge.estimates_note or 'no human labels'}. Label a "
            "sample (judgecards audit sample, or judgecards labels import) to correct the judge's "
            "numbers.",
        )
    table = Table(
        (
            "estimate",
            f"corrected ({pct})",
            f"human only ({pct})",
            f"judge only, UNCORRECTED ({pct})",
            "effective n",
            "labelled",
        ),
        tuple(
            (
                row.name,
                _interval(row.result.corrected),
                _interval(row.result.human_only),
                _interval(row.result.judge_only),
                _number(row.result.effective_labels, 0),
                str(row.result.n_labeled),
            )
            for row in report.rows
        ),
    )
    found = _estimate_plots(report.rows, table, anchor)
    designs = dict.fromkeys(row.design for row in report.rows)
    notes = (
        tuple(
            ("labels: " if design.known else "labels (ASSUMPTION): ") + design.description
            for design in designs
        )
        + tuple(interval_notes(report))
        + tuple(f"note: {note}" for note in report.notes)
    )
    who = ", ".join(report.labelers)
    judged = (
        f"{report.n_comparisons} comparisons judged in both orders"
        if report.n_comparisons
        else f"{report.n_judged} judged items"
    )
    intro = (
        f"{judged}, {report.n_labeled} labelled by {who}. Corrected = the judge on every item "
        "minus its bias measured on the labelled items (prediction-powered inference, PPI++); "
        "report that column. Judge only is uncorrected: it carries the judge's bias. Effective n "
        "= the human labels the human-only interval would need to be as narrow.",
        judge.guarantee,
    )
    return Part(
        "estimates",
        "Corrected estimates",
        intro,
        found,
        (Table(("notes",), tuple((n,) for n in notes)),) if notes else (),
    )


def _estimate_plots(rows: Sequence[EstimateRow], table: Table, anchor: str) -> tuple[Plot, ...]:
    """One plot per scale: shares (verdicts, win rates: 0-1) apart from means of scores (the
    card's scale, e.g. 1-5), so neither is squeezed onto the other's axis."""
    shares = [i for i, r in enumerate(rows) if r.kind != "score"]
    means = [i for i, r in enumerate(rows) if r.kind == "score"]
    groups: list[tuple[str, str, str, tuple[float, float] | None, list[int]]] = [
        ("shares", "Shares and win rates (0 to 1)", "share", (0.0, 1.0), shares),
        ("means", "Means of scores (each on its score scale)", "mean score", None, means),
    ]
    found = []
    for key, title, xlabel, limits, indexes in groups:
        if not indexes:
            continue
        chosen = [rows[i] for i in indexes]
        svg = plots.forest(
            [r.name for r in chosen],
            [
                ("corrected", [_point(r.result.corrected) for r in chosen]),
                ("human only", [_point(r.result.human_only) for r in chosen]),
                ("judge only (uncorrected)", [_point(r.result.judge_only) for r in chosen]),
            ],
            prefix=f"{anchor}-est-{key}-",
            xlabel=xlabel,
            limits=limits,
        )
        part = Table(table.header, tuple(table.rows[i] for i in indexes))
        found.append(
            Plot(f"estimates-{key}", f"{title}: corrected, human only, judge only", svg, part)
        )
    return tuple(found)


def _over_time(judge: JudgeReport, anchor: str, min_kappa: float, pct: str) -> Part:
    heading = "Agreement with people over time"
    notes = tuple(judge.audit_notes)
    if not judge.audits:
        return Part(
            "over-time",
            heading,
            notes,
            empty="No audits of this card version and judge model: nothing measures it against "
            "people yet (judgecards audit sample).",
        )
    table = Table(
        ("audit", "date", "kind", "n", f"agreement ({pct})", f"kappa ({pct})", "vs baseline"),
        tuple(
            (
                f"#{s.audit.id}",
                s.audit.created_at.date().isoformat(),
                s.audit.kind,
                str(s.kappa.n if s.kappa else 0),
                _interval(s.agreement),
                _interval(s.kappa) if s.kappa else "not labelled",
                _versus(s.baseline_id, s.audit.id, s.vs_baseline),
            )
            for s in judge.audits
        ),
    )
    gate = judge.gate
    lead = list(notes)
    if gate is not None:
        lead.insert(0, f"Gate ({'PASS' if gate.passed else 'FAIL'}): " + "; ".join(gate.reasons))
    labelled = judge.labelled_audits
    if not labelled:
        return Part(
            "over-time",
            heading,
            tuple(lead),
            tables=(table,),
            empty="No audit has human labels yet: no kappa to plot.",
        )
    svg = plots.over_time(
        [f"#{s.audit.id}\n{s.audit.created_at:%Y-%m-%d}" for s in labelled],
        [
            ("kappa", [_point(s.kappa) for s in labelled]),
            ("agreement", [_point(s.agreement) for s in labelled]),
        ],
        prefix=f"{anchor}-time-",
        threshold=min_kappa,
        ylabel="judge vs people",
    )
    plotted = Table(
        table.header, tuple(r for r, s in zip(table.rows, judge.audits) if s in labelled)
    )
    return Part(
        "over-time",
        heading,
        tuple(lead),
        (Plot("over-time", f"Kappa and agreement per audit, {pct} intervals", svg, plotted),),
    )


def _latest(judge: JudgeReport, anchor: str, pct: str) -> list[Part]:
    latest = judge.latest
    if latest is None:
        return []
    parts = []
    primary = latest.fields[latest.primary] if latest.primary else None
    if primary is not None and primary.report is not None:
        report = primary.report
        labels = [str(label) for label in report.labels]
        matrix = [list(row) for row in report.confusion]
        svg = plots.confusion(labels, matrix, prefix=f"{anchor}-cm-", field=primary.field)
        table = Table(
            ("people \\ judge", *labels),
            tuple((label, *(str(c) for c in row)) for label, row in zip(labels, matrix)),
        )
        parts.append(
            Part(
                "confusion",
                f"Confusion matrix: audit #{latest.audit.id}, {primary.field}",
                (
                    f"Rows are the people's label (their majority), columns the judge's; {report.n} items.",
                ),
                (Plot("confusion", f"Confusion matrix of {primary.field}", svg, table),),
            )
        )
    fields = [f for f in latest.fields.values() if f.kappa is not None or f.ceiling is not None]
    rows = []
    judge_points, ceiling_points = [], []
    for f in fields:
        ceiling = f.ceiling
        ceiling_kappa = ceiling.mean_pairwise_kappa if ceiling is not None else math.nan
        rows.append(
            (
                f.field,
                f.kind,
                str(f.report.n if f.report else 0),
                _interval(f.report.agreement if f.report else None),
                _interval(f.kappa),
                f.weights or "none",
                _number(ceiling_kappa, 3) if ceiling is not None else "one labeler: no ceiling",
                _interval(ceiling.krippendorff_alpha) if ceiling is not None else "-",
                str(f.ties),
            )
        )
        judge_points.append(_point(f.kappa))
        ceiling_points.append((ceiling_kappa, math.nan, math.nan))
    table = Table(
        (
            "field",
            "kind",
            "n",
            f"agreement ({pct})",
            f"judge-people kappa ({pct})",
            "weights",
            "people-people kappa (ceiling)",
            f"Krippendorff alpha ({pct})",
            "tied items",
        ),
        tuple(rows),
    )
    if fields:
        series = [("judge vs people", judge_points)]
        if any(not math.isnan(p[0]) for p in ceiling_points):
            series.append(("people vs people (ceiling)", ceiling_points))
        svg = plots.forest(
            [f.field for f in fields],
            series,
            prefix=f"{anchor}-axes-",
            xlabel="kappa (score axes: quadratic-weighted)",
            limits=(0.0, 1.0),
        )
        lead = (
            "The human ceiling is how well the labelers agree with each other on the items two "
            "or more of them labelled: a judge is not expected to beat it.",
        )
        if all(f.ceiling is None for f in fields):
            lead = (
                "Only one labeler per item: there is no human ceiling to compare with "
                "(ask for two labels per item to measure it).",
            )
        parts.append(
            Part(
                "fields",
                f"Per field: judge vs people beside the human ceiling (audit #{latest.audit.id})",
                lead,
                (Plot("fields", "Kappa per field", svg, table),),
            )
        )
    view = latest.pass_fail
    if view is not None:
        parts.append(_pass_fail(view, latest.audit.id, pct))
    return parts


def _pass_fail(view: PassFailView, audit_id: int, pct: str) -> Part:
    """The primary field read as a binary judge: TPR, TNR, the readiness line, the share."""
    rates = view.rates
    positive = rates.positive
    rows = [
        (f"TPR: people {positive}, judge {positive}", _interval(rates.tpr), str(rates.tpr.n)),
        (f"TNR: people not {positive}, judge not", _interval(rates.tnr), str(rates.tnr.n)),
    ]
    if view.corrected is not None:
        share = view.corrected
        rows.append((f"share {positive}: Rogan–Gladen", _interval(share), str(share.n)))
    if view.ppi is not None:
        rows.append((f"share {rates.positive}: PPI", _interval(view.ppi), str(view.ppi.n)))
    lead = (view.readiness(), *((view.note,) if view.note else ()))
    table = Table(
        ("rate", f"value ({pct}; Wilson for TPR/TNR)", "n"),
        tuple(rows),
        f"{view.field}: {view.rule}; positive {rates.positive}",
    )
    return Part(
        "pass-fail", f"Pass/fail view: audit #{audit_id}, {view.field}", lead, tables=(table,)
    )


def _pairwise(judge: JudgeReport, anchor: str, pct: str, *, corrected: bool) -> Part:
    heading = "Pairwise comparisons"
    section = judge.pairwise
    if section is None:
        return Part("pairwise", heading, empty="No pairwise comparisons by this judge.")
    mark = " (judge only, uncorrected)" if corrected else ""
    found: list[Plot] = []
    pairs = section.pairs
    table = Table(
        (
            "model A",
            "model B",
            "comparisons",
            "wins / losses / ties",
            f"win rate, ties half ({pct})",
            f"win rate, ties dropped ({pct})",
            "sign test p",
        ),
        tuple(
            (
                p.model_a,
                p.model_b,
                str(p.n),
                f"{p.wins} / {p.losses} / {p.ties}",
                _interval(p.win_rate_ties_half),
                _interval(p.win_rate),
                _number(p.sign_test_p, 4),
            )
            for p in pairs
        ),
    )
    svg = plots.forest(
        [f"{p.model_a} vs {p.model_b}" for p in pairs],
        [("win rate of A, ties half", [_point(p.win_rate_ties_half) for p in pairs])],
        prefix=f"{anchor}-win-",
        xlabel="win rate of A",
        reference=0.5,
        reference_label="even",
    )
    found.append(Plot("win-rates", f"Win rates{mark}", svg, table))
    o = section.overall
    bias = Table(
        ("measure", f"value ({pct})", "over"),
        (
            ("position consistency", _interval(o.position_consistency), f"{o.n} comparisons"),
            (
                "first-position preference",
                _interval(o.first_position_preference),
                f"{o.single_judgments - o.single_ties} decided single judgments (0.5 = no bias)",
            ),
        ),
    )
    svg = plots.forest(
        ["position consistency", "first-position preference"],
        [("judge", [_point(o.position_consistency), _point(o.first_position_preference)])],
        prefix=f"{anchor}-pos-",
        xlabel="share",
        reference=0.5,
        reference_label="0.5",
    )
    found.append(Plot("position", "Position bias (every comparison in both orders)", svg, bias))
    lead = []
    ratings = section.ratings
    if ratings is not None:
        table = Table(
            ("rank", "model", "rating", f"{pct} interval", "games", "W / L / T"),
            tuple(
                (
                    str(m.rank),
                    m.model,
                    _number(m.rating, 1),
                    f"[{_number(m.low, 1)}, {_number(m.high, 1)}]",
                    str(m.games),
                    f"{m.wins} / {m.losses} / {m.ties}",
                )
                for m in ratings.models
            ),
            caption=f"Bradley–Terry, {ratings.n_comparisons} comparisons, ties half a win, "
            f"{ratings.n_resamples} bootstrap resamples (judgecards rank)",
        )
        svg = plots.forest(
            [m.model for m in ratings.models],
            [("rating", [(m.rating, m.low, m.high) for m in ratings.models])],
            prefix=f"{anchor}-bt-",
            xlabel="Bradley–Terry rating",
            reference=ratings.initial,
            reference_label=f"mean {ratings.initial:g}",
        )
        found.append(Plot("ratings", f"Bradley–Terry ratings{mark}", svg, table))
    elif section.ratings_note:
        lead.append(f"No ratings: {section.ratings_note}")
    return Part("pairwise", heading, tuple(lead), tuple(found))


def _distributions(judge: JudgeReport, anchor: str, *, corrected: bool) -> Part:
    heading = "Score distributions" + (" (the judge's own, uncorrected)" if corrected else "")
    panels = [d for d in judge.distributions if d.counts]
    if not panels:
        return Part("distributions", heading, empty="No successful results to count.")
    svg = plots.bars(
        [
            (d.field, [label for label, _ in d.counts], [float(c) for _, c in d.counts])
            for d in panels
        ],
        prefix=f"{anchor}-dist-",
        ylabel="results",
    )
    table = Table(
        ("field", "value", "results", "share"),
        tuple(
            (d.field, label, str(count), f"{count / d.total:.1%}")
            for d in panels
            for label, count in d.counts
        ),
    )
    return Part(
        "distributions", heading, (), (Plot("distributions", "Verdicts and scores", svg, table),)
    )


def _costs(judge: JudgeReport, anchor: str) -> Part:
    heading = "Tokens and cost per day"
    if not judge.costs:
        return Part("costs", heading, empty="No stored results.")
    days = [c.day for c in judge.costs]
    svg = plots.bars(
        [("tokens", days, [])],
        prefix=f"{anchor}-cost-",
        ylabel="tokens",
        stacked=[
            ("input", [float(c.input_tokens) for c in judge.costs]),
            ("output", [float(c.output_tokens) for c in judge.costs]),
        ],
    )
    table = Table(
        ("day (UTC)", "results", "cached", "input tokens", "output tokens", "cost (USD)"),
        tuple(
            (
                c.day,
                str(c.results),
                str(c.cached),
                f"{c.input_tokens:,}",
                f"{c.output_tokens:,}",
                _cost(c.cost_usd, c.known_cost_usd, c.unknown_cost_results),
            )
            for c in judge.costs
        ),
    )
    lead = (
        "judgecards stores no run id: results are grouped by the UTC day they were judged "
        "(judgecards cost --by day). A cost is unknown when the model has no price.",
    )
    return Part("costs", heading, lead, (Plot("costs", "Tokens per day", svg, table),))


# --------------------------------------------------------------------------- formatting


def _point(e: Estimate | None) -> plots.Interval:
    return (math.nan, math.nan, math.nan) if e is None else (e.value, e.low, e.high)


def _interval(e: Estimate | None) -> str:
    if e is None or math.isnan(e.value):
        return "-"
    if math.isnan(e.low) or math.isnan(e.high):
        return f"{e.value:.3f} (no interval, n={e.n})"
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _number(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def _versus(baseline: int | None, audit: int, delta: Estimate | None) -> str:
    if baseline == audit:
        return "baseline"
    if delta is None or baseline is None:
        return ""
    return f"{delta.value:+.3f} [{delta.low:+.3f}, {delta.high:+.3f}] vs #{baseline}"


def _cost(cost: float | None, known: float, unknown: int) -> str:
    if not unknown:
        return format_cost(cost)
    return (f"{format_cost(known)} + " if known else "") + f"unknown ({unknown} results)"


def plot_count(views: Sequence[JudgeView]) -> int:
    """How many plots the views draw (each is one ``<svg>`` element on the page)."""
    return sum(view.n_plots for view in views)
