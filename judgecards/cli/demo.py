"""``judgecards demo``: what judgecards tells a team, on real judges and real human labels.

No key, no network: the recorded verdicts of six LLMBar evaluators and of GPT-4 on MT-Bench are
shipped in the package (`judgecards.demo`), stored as judgments, and measured against the gold
labels and expert votes stored as human labels.

Exit codes: 0 done; 2 an error (a database path that cannot be used, matplotlib missing for the
report: pass ``--no-report`` or ``pip install 'judgecards[serve]'``), printed as ``Error: ...``.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import click

from judgecards.errors import MissingExtra

__all__ = ["demo"]


@click.command()
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Database to store the demo's judgments and labels in (default: a new temporary "
    "directory, printed). The cascade's run goes to a second file beside it (NAME-cascade.db).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the HTML report (default: NAME-report.html beside the database).",
)
@click.option("--no-report", is_flag=True, help="Skip the HTML report (needs no matplotlib).")
@click.option("--open", "open_report", is_flag=True, help="Open the report in a web browser.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print every figure as one JSON document instead."
)
@click.option(
    "--resamples",
    default=1000,
    show_default=True,
    type=click.IntRange(100, 100_000),
    help="Bootstrap resamples per interval.",
)
def demo(  # noqa: PLR0917  click passes one parameter per option
    db: Path | None,
    report_path: Path | None,
    no_report: bool,
    open_report: bool,
    as_json: bool,
    resamples: int,
) -> None:
    """Real judges against real people, offline: LLMBar's six evaluators and MT-Bench's GPT-4.

    Stores their recorded verdicts as judgments and the gold labels and expert votes as human
    labels, then prints agreement and kappa per judge with intervals (beside the human ceiling
    on MT-Bench), position consistency, a corrected estimate beside the judge-only one, a cascade
    with its guarantee and coverage, a fitted jury against the best judge held out, and writes
    the HTML report. Every number is computed from the stored data.
    """
    from judgecards.demo.walkthrough import run_demo

    if no_report and (open_report or report_path is not None):
        raise click.UsageError("--no-report cannot be combined with --report or --open")
    if not no_report:
        _require_matplotlib()  # before anything is created
    if db is None:
        db = Path(tempfile.mkdtemp(prefix="judgecards-demo-")) / "demo.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    report = None if no_report else (report_path or db.with_name(f"{db.stem}-report.html"))
    run = run_demo(
        db, report=report, resamples=resamples, progress=lambda line: click.echo(line, err=True)
    )
    figures = {"db": str(run.db), "report": None if report is None else str(report)}
    figures.update(run.figures)
    if as_json:
        click.echo(json.dumps(_strict(figures), indent=2))
    else:
        click.echo(_text(figures))
    if report is not None and open_report:
        # The desktop's opener (xdg-open, open, start), waited for: it returns once launched.
        click.launch(str(report.resolve()), wait=True)


def _require_matplotlib() -> None:
    from judgecards.report.plots import require_matplotlib

    try:
        require_matplotlib()
    except MissingExtra as error:
        raise MissingExtra(
            f"{error} (or run judgecards demo --no-report)", extra=error.extra
        ) from None


def _strict(value: Any) -> Any:
    """JSON without NaN: ``nan`` becomes ``null``."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def _pct(e: dict[str, Any]) -> str:
    return f"{100 * e['value']:5.1f}% [{100 * e['low']:.1f}, {100 * e['high']:.1f}]"


def _kappa(e: dict[str, Any]) -> str:
    return f"{e['value']:5.2f} [{e['low']:.2f}, {e['high']:.2f}]"


def _text(f: dict[str, Any]) -> str:
    out = [
        "judgecards demo: real judges' recorded verdicts against real human labels",
        f"database: {f['db']}",
        "",
        "1. LLMBar (Zeng et al. 2024): six judges on instruction-following pairs with a",
        "   known better answer. Accuracy counts each order's verdict against the gold label",
        "   (as the paper does); consistent = same verdict with the answers swapped.",
    ]
    for judge in f["llmbar"]:
        out.append(f"   {judge['model']}")
        for subset, s in judge["subsets"].items():
            out.append(
                f"     {subset.removeprefix('LLMBar/'):<21} accuracy {_pct(s['accuracy'])}"
                f"  κ {_kappa(s['kappa'])}  consistent {100 * s['consistency']['value']:.0f}%"
            )
    m = f["mt_bench"]
    a, c = m["agreement"], m["human_ceiling"]
    out += [
        "",
        f"2. MT-Bench (Zheng et al. 2023): GPT-4 against {m['votes']:,} expert votes on "
        f"{m['comparisons']:,} comparisons,",
        "   per vote, beside two experts' agreement with each other (the human ceiling)",
        f"   with ties (S1)     GPT-4 {_pct(a['with_ties'])}   experts {_pct(c['with_ties'])}",
        f"   without ties (S2)  GPT-4 {_pct(a['without_ties'])}   experts "
        f"{_pct(c['without_ties'])}",
        f"   κ against the experts' plurality {_kappa(m['kappa'])}",
        "   (the paper reports GPT-4 66% with ties, 85% without)",
    ]
    e = f["estimate"]
    out += [
        "",
        f"3. Corrected estimate: {e['model']}'s win rate on MT-Bench as GPT-4 judges it "
        f"({e['comparisons']} comparisons;",
        f"   people's votes used on a random {e['labelled']} of them)",
        f"   judge only  {_pct(e['judge_only'])}   the judge's bias is not in this interval",
        f"   human only  {_pct(e['human_only'])}   {e['labelled']} labelled comparisons",
        f"   corrected   {_pct(e['corrected'])}   as narrow as "
        f"{e['effective_labels']:.0f} labels alone",
        f"   every vote  {100 * e['all_votes']:5.1f}%   (what the corrected interval aims at)",
    ]
    k = f["cascade"]
    out += [
        "",
        f"4. Cascade: calibrated on {k['calibration_pairs']} labelled LLMBar pairs, run on the "
        f"other {k['pairs']}; guarantee: agreement ≥ {100 * k['target']:.0f}%",
        f"   on the pairs each judge decides, with probability ≥ {1 - k['delta']:.0%}",
    ]
    if k.get("error"):
        out.append(f"   {k['error']}")
    for stage in k["stages"]:
        if stage["threshold"] is None:
            out.append(f"   {stage['model']:<20} no threshold meets the target: never called")
        else:
            out.append(
                f"   {stage['model']:<20} decides when confidence ≥ {stage['threshold']:.2f}"
                f"{' (both orders agree)' if stage['threshold'] == 1 else ''}: "
                f"{stage['decided']} of {stage['sent']} pairs"
            )
    agreed = k["agreement_on_decided"]
    out.append(
        f"   people               {k['escalated']} pairs (an audit in {k['db']})"
        + f"\n   coverage {100 * (k['coverage'] or 0):.1f}%; on the decided pairs the gold label"
        + (f" agrees {100 * agreed:.1f}%" if agreed is not None else " is not known")
    )
    j = f["jury"]
    out += [
        "",
        "5. A jury of the six LLMBar judges, fitted on labels and held out (5-fold, 10 repeats)",
        f"   fitted jury {100 * j['jury']:.1f}%   best judge alone ({j['best_judge']}) "
        f"{100 * j['judges'][j['best_judge']]:.1f}%   majority vote {100 * j['majority']:.1f}%",
        f"   {j['note']}",
    ]
    if f["report"]:
        out += ["", f"report: {f['report']}  (judgecards demo --open opens it)"]
    return "\n".join(out)
