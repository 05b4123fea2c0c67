"""`judgecards demo`: real judges' recorded verdicts and real human labels, through the product.

The steps are the ones a team takes with its own judge, on data whose answers are known:

1. store the judgments — each recorded judge is a `judgecards.Judge` of the ``pairwise`` card
   whose provider replies with the recorded verdicts (`judgecards.demo.recorded`), run by
   `judgecards.compare_many` (LLMBar, both orders) or `Judge.score_many` (MT-Bench);
2. import the gold labels and expert votes as human labels (`calibration.import_labels`);
3. compute every figure from what is stored, with the library's public functions: agreement and
   Cohen's kappa per judge (`calibration.agreement`, `calibration.kappa`), MT-Bench agreement
   per vote beside the human–human ceiling (`calibration.pairwise_agreement`,
   `calibration.pairwise_human_agreement`), position consistency (the two orders' agreement),
   a win rate corrected with a quarter of the labels (`calibration.corrected_estimate`), a
   cascade calibrated on half of LLMBar and run on the other half (`calibration.PairwiseCascade`),
   a fitted jury held out against its best judge (`calibration.evaluate_jury`), and the HTML
   report (`judgecards report`'s builder).

Like ``cli`` and ``serve`` this package sits above both `judgecards` and `calibration`; the
judgecards core never imports it.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from calibration import (
    Audit,
    PairwiseCascade,
    agreement,
    corrected_estimate,
    evaluate_jury,
    import_labels,
    kappa,
    pairwise_agreement,
    pairwise_human_agreement,
    read_labels,
)
from judgecards.cards import Card, load_card
from judgecards.demo.datasets import (
    LLMBAR_EVALUATORS,
    LLMBarItem,
    MTBenchComparison,
    llmbar_items,
    mt_bench_comparisons,
)
from judgecards.demo.recorded import Recorded, RecordedProvider
from judgecards.errors import AuditError
from judgecards.judging import Judge
from judgecards.metrics.stats import Estimate
from judgecards.pairwise.compare import compare_many
from judgecards.storage import Store

__all__ = ["CASCADE", "DemoRun", "run_demo"]

CARD = "pairwise"
LLMBAR_SOURCE = "LLMBar, Zeng et al. 2024, Vanilla prompt"
MT_BENCH_SOURCE = "MT-Bench human judgments, Zheng et al. 2023"
MT_BENCH_JUDGE = "mt-bench:gpt-4"
CASCADE = ("llmbar:ChatGPT", "llmbar:GPT-4")
"""The cascade shown: the cheaper judge first, GPT-4 next, people last."""
CASCADE_TARGET = 0.8
CASCADE_DELTA = 0.1
ESTIMATED_MODEL = "gpt-4"
"""Whose MT-Bench win rate is estimated: GPT-4 judging GPT-4's answers (self-preference)."""
LABELLED_SHARE = 0.25
_ORDER_FAILED = "no verdict"
_SWAP = {"A": "B", "B": "A", "tie": "tie"}
_POINTS = {"A": 1.0, "tie": 0.5, "B": 0.0}

Progress = Callable[[str], None]


@dataclass
class DemoRun:
    """What the demo computed: ``figures`` (JSON-ready) and the files it wrote."""

    db: Path
    cascade_db: Path
    report: Path | None
    figures: dict[str, Any] = field(default_factory=dict)


def llmbar_model(evaluator: str) -> str:
    return f"llmbar:{evaluator}"


def _position(verdict: str | None, *, swapped: bool) -> Literal["A", "B"] | None:
    """LLMBar's "1"/"2" (original numbering) as the position the judge chose in that order."""
    if verdict is None:
        return None
    first = verdict == ("2" if swapped else "1")
    return "A" if first else "B"


def _llmbar_judge(card: Card, evaluator: str, items: Sequence[LLMBarItem], store: Store) -> Judge:
    recorded: list[Recorded] = []
    for item in items:
        false_order, true_order = item.verdicts[evaluator]
        recorded.append(
            (item.input, item.output_1, item.output_2, _position(false_order, swapped=False))
        )
        recorded.append(
            (item.input, item.output_2, item.output_1, _position(true_order, swapped=True))
        )
    provider = RecordedProvider(evaluator, recorded, tags=card.tags, source=LLMBAR_SOURCE)
    return Judge(card, llmbar_model(evaluator), provider=provider, db=store, max_attempts=1)


def _pairs(items: Sequence[LLMBarItem]) -> list[dict[str, Any]]:
    return [
        {"id": i.id, "question": i.input, "answer_a": i.output_1, "answer_b": i.output_2}
        for i in items
    ]


def _gold(item: LLMBarItem) -> str:
    return "A" if item.label == 1 else "B"


def _write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _import(store: Store, rows: Sequence[Mapping[str, Any]], labeler: str) -> int:
    """Store human labels the way ``judgecards labels import`` does, from a JSONL file."""
    with tempfile.TemporaryDirectory(prefix="judgecards-demo-") as tmp:
        path = _write_jsonl(Path(tmp) / "labels.jsonl", rows)
        report = import_labels(path, labeler=labeler, db=store, replace=True)
    return report.labels_written


def _labelled(store: Store, model: str) -> bool:
    """Whether people's labels of this judge are stored already (labelling twice would count
    every label twice, in a second audit)."""
    return bool(read_labels(store, card=CARD, model=model))


def _audit(store: Store, model: str, rows: Sequence[Mapping[str, Any]], labeler: str) -> int:
    """People label every judged result in an audit, as ``judgecards audit sample`` then
    ``audit ingest`` record it: the report's agreement sections read audits."""
    with Audit(store) as audits, tempfile.TemporaryDirectory(prefix="judgecards-demo-") as tmp:
        results = {str(row["result_id"]) for row in rows}
        sample = audits.sample(card=CARD, model=model, n=len(results), seed=0)
        audit_id = sample.audit.id
        sheet = _write_jsonl(
            Path(tmp) / "sheet.jsonl", [{"audit_id": audit_id, **row} for row in rows]
        )
        report = audits.ingest(sheet, labeler=labeler, audit_id=audit_id, replace=True)
    return report.labels_written


def _load_llmbar(
    card: Card,
    items: Sequence[LLMBarItem],
    evaluators: Sequence[str],
    store: Store,
    *,
    audited: bool,
) -> None:
    gold = {item.id: _gold(item) for item in items}
    for evaluator in evaluators:
        with _llmbar_judge(card, evaluator, items, store) as judge:
            comparisons = compare_many(judge, _pairs(items), concurrency=8)
        if _labelled(store, llmbar_model(evaluator)):
            continue  # a re-run on the same database: the stored labels stand
        if not audited:
            rows = [
                {"result_id": c.first_order.result_id, "winner": gold[str(c.pair_id)]}
                for c in comparisons
            ]
            _import(store, rows, labeler="llmbar-gold")
            continue
        # Every judged order result is labelled in an audit (the B-first order names positions,
        # so its label is the gold swapped); an A-first order with no verdict gets its label
        # outside the audit, so that every pair keeps its gold label.
        in_audit, outside = [], []
        for c in comparisons:
            winner = gold[str(c.pair_id)]
            for order, label in ((c.first_order, winner), (c.second_order, _SWAP[winner])):
                if order.status == "ok":
                    in_audit.append({"result_id": order.result_id, "winner": label})
            if c.first_order.status != "ok":
                outside.append({"result_id": c.first_order.result_id, "winner": winner})
        _audit(store, llmbar_model(evaluator), in_audit, labeler="llmbar-gold")
        if outside:
            _import(store, outside, labeler="llmbar-gold")


def _mt_bench_inputs(c: MTBenchComparison) -> dict[str, Any]:
    # The answers' texts are not in the data; the card still needs one input per answer.
    return {
        "id": c.id,
        "question": f"MT-Bench question {c.question_id}, turn {c.turn}",
        "answer_a": f"{c.model_a}'s answer (its text is not shipped with the demo)",
        "answer_b": f"{c.model_b}'s answer (its text is not shipped with the demo)",
    }


def _load_mt_bench(card: Card, comparisons: Sequence[MTBenchComparison], store: Store) -> None:
    inputs = [_mt_bench_inputs(c) for c in comparisons]
    recorded: list[Recorded] = [
        (i["question"], i["answer_a"], i["answer_b"], c.gpt4_winner)
        for i, c in zip(inputs, comparisons)
    ]
    provider = RecordedProvider("gpt-4", recorded, tags=card.tags, source=MT_BENCH_SOURCE)
    with Judge(card, MT_BENCH_JUDGE, provider=provider, db=store, max_attempts=1) as judge:
        results = judge.score_many(inputs, concurrency=8)
    if _labelled(store, MT_BENCH_JUDGE):
        return  # a re-run on the same database: the stored labels stand
    # The votes are anonymous counts: vote k of a comparison is stored as labeler "expert-vote-k".
    rows = [
        {"result_id": r.id, "winner": vote, "labeler": f"expert-vote-{k + 1}"}
        for r, c in zip(results, comparisons)
        for k, vote in enumerate(c.votes)
    ]
    _audit(store, MT_BENCH_JUDGE, rows, labeler="expert")


# --------------------------------------------------------------------------- figures


def _order_verdicts(store: Store, model: str) -> dict[str, tuple[str, str, str]]:
    """pair id -> (first order's verdict, second order's, the A-first result id), A/B naming."""
    found: dict[str, tuple[str, str, str]] = {}
    for row in store.comparisons(card=CARD, model=model, status=None):
        found[str(row["pair_id"])] = (
            row["first_verdict"] or _ORDER_FAILED,
            row["second_verdict"] or _ORDER_FAILED,
            row["first_result_id"],
        )
    return found


def _labels(store: Store, model: str) -> dict[str, list[str]]:
    by_result: dict[str, list[str]] = {}
    for label in read_labels(store, card=CARD, model=model):
        by_result.setdefault(label.result_id, []).append(str(label.value))
    return by_result


def _est(e: Estimate) -> dict[str, Any]:
    return e.to_dict()


def _llmbar_figures(
    store: Store, items: Sequence[LLMBarItem], evaluators: Sequence[str], resamples: int
) -> list[dict[str, Any]]:
    subsets = sorted({i.subset for i in items}, key=lambda s: (s != "LLMBar/Natural", s))
    judges = []
    for evaluator in evaluators:
        model = llmbar_model(evaluator)
        orders = _order_verdicts(store, model)
        labels = _labels(store, model)
        entry: dict[str, Any] = {"model": model, "subsets": {}}
        for subset in subsets:
            chosen = [i for i in items if i.subset == subset]
            judged: list[str] = []
            gold: list[str] = []
            for item in chosen:
                first, second, result_id = orders[item.id]
                human = labels[result_id][0]
                judged += [first, second]
                gold += [human, human]
            firsts = [orders[i.id][0] for i in chosen]
            seconds = [orders[i.id][1] for i in chosen]
            entry["subsets"][subset] = {
                "items": len(chosen),
                # The paper's accuracy: each order's verdict against the gold label, averaged.
                "accuracy": _est(agreement(judged, gold, n_resamples=resamples)),
                "kappa": _est(kappa(judged, gold, n_resamples=resamples)),
                # Position consistency: the two orders agree (two unread replies agree too,
                # as LLMBar counts them).
                "consistency": _est(agreement(firsts, seconds, n_resamples=resamples)),
            }
        judges.append(entry)
    return judges


def _majority(votes: Sequence[str]) -> str:
    counts = Counter(votes).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "tie"
    return counts[0][0]


def _mt_bench_votes(
    store: Store, comparisons: Sequence[MTBenchComparison]
) -> tuple[list[str], list[list[str]], list[tuple[str, str]]]:
    """GPT-4's stored verdict, the stored votes and the model pair, per comparison, in the
    data's order (so the labelled sample drawn from them is the same on every run)."""
    labels = _labels(store, MT_BENCH_JUDGE)
    stored = {
        str(result.item_id): result
        for result, _ in store.results(card=CARD, model=MT_BENCH_JUDGE, status="ok")
    }
    verdicts, votes, pairs = [], [], []
    for c in comparisons:
        result = stored[c.id]
        verdicts.append(str(result.verdict))
        votes.append(labels.get(result.id, []))
        pairs.append((c.model_a, c.model_b))
    return verdicts, votes, pairs


def _mt_bench_figures(
    store: Store, comparisons: Sequence[MTBenchComparison], resamples: int, seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    verdicts, votes, pairs = _mt_bench_votes(store, comparisons)
    voted = [i for i, v in enumerate(votes) if v]
    judge = [verdicts[i] for i in voted]
    human = [votes[i] for i in voted]
    plurality = [_majority(v) for v in human]
    figures = {
        "model": MT_BENCH_JUDGE,
        "comparisons": len(voted),
        "votes": sum(len(v) for v in human),
        "agreement": pairwise_agreement(judge, human, n_resamples=resamples).to_dict(),
        "human_ceiling": pairwise_human_agreement(human, n_resamples=resamples).to_dict(),
        "kappa": _est(kappa(judge, plurality, n_resamples=resamples)),
    }
    # GPT-4's win rate as GPT-4 judges it, corrected with a uniform sample of the votes.
    judge_points, human_points = [], []
    for i in voted:
        model_a, model_b = pairs[i]
        if ESTIMATED_MODEL not in (model_a, model_b):
            continue
        flip = model_b == ESTIMATED_MODEL
        point = _POINTS[verdicts[i]]
        people = float(np.mean([_POINTS[v] for v in votes[i]]))
        judge_points.append(1.0 - point if flip else point)
        human_points.append(1.0 - people if flip else people)
    rng = np.random.default_rng(seed)
    n = len(judge_points)
    labelled = np.zeros(n, dtype=bool)
    labelled[rng.choice(n, size=round(LABELLED_SHARE * n), replace=False)] = True
    j, h = np.array(judge_points), np.array(human_points)
    result = corrected_estimate(
        h[labelled], j[labelled], j[~labelled], finite_population=True, bounds=(0.0, 1.0)
    )
    estimate = {
        "model": ESTIMATED_MODEL,
        "comparisons": n,
        "labelled": int(labelled.sum()),
        **result.to_dict(),
        "all_votes": float(h.mean()),
    }
    return figures, estimate


def _cascade(
    card: Card, items: Sequence[LLMBarItem], cascade_db: Path, seed: int
) -> dict[str, Any]:
    """Calibrate on half of LLMBar (its labels stored), run on the other half (unlabelled)."""
    order = np.random.default_rng(seed).permutation(len(items))
    calibration = [items[i] for i in sorted(order[: len(items) // 2])]
    held_out = [items[i] for i in sorted(order[len(items) // 2 :])]
    evaluators = [m.split(":", 1)[1] for m in CASCADE]
    with Store(cascade_db) as store:
        _load_llmbar(card, calibration, evaluators, store, audited=False)
        judges = [_llmbar_judge(card, e, items, store) for e in evaluators]
        try:
            cascade = PairwiseCascade(judges, target=CASCADE_TARGET, delta=CASCADE_DELTA)
            run = cascade.run(_pairs(held_out), concurrency=8)
        except AuditError as error:
            # No judge can meet the target: nothing is judged and every pair is for people.
            # That is an answer too, so the demo says it instead of stopping.
            return {
                "target": CASCADE_TARGET,
                "delta": CASCADE_DELTA,
                "pairs": len(held_out),
                "calibration_pairs": len(calibration),
                "stages": [],
                "decided": 0,
                "escalated": len(held_out),
                "coverage": 0.0,
                "agreement_on_decided": None,
                "db": str(cascade_db),
                "error": str(error),
            }
        finally:
            for judge in judges:
                judge.close()
    gold = {i.id: _gold(i) for i in held_out}
    decided = [d for d in run.decisions if d.decided_by is not None and d.comparison is not None]
    right = sum(d.comparison.winner == gold[str(d.pair_id)] for d in decided if d.comparison)
    return {
        **run.to_dict(),
        "calibration_pairs": len(calibration),
        "decided": len(decided),
        "agreement_on_decided": right / len(decided) if decided else None,
        "db": str(cascade_db),
    }


def _jury(store: Store, items: Sequence[LLMBarItem], evaluators: Sequence[str]) -> dict[str, Any]:
    columns, names = [], []
    for evaluator in evaluators:
        orders = _order_verdicts(store, llmbar_model(evaluator))
        for position in (0, 1):
            # A reply with no verdict is missing, not a third label (the jury fits A vs B).
            columns.append(
                [None if (v := orders[i.id][position]) == _ORDER_FAILED else v for i in items]
            )
            names.append(llmbar_model(evaluator))
    matrix = np.array(columns, dtype=object).T
    result = evaluate_jury(matrix, [_gold(i) for i in items], judges=names, repeats=10)
    return {
        "jury": result.jury,
        "jury_spread": result.jury_spread,
        "majority": result.majority,
        "dawid_skene": result.dawid_skene,
        "judges": result.judges,
        "best_judge": result.best_judge,
        "hurts": result.hurts,
        "note": result.note,
    }


def run_demo(
    db: Path,
    *,
    report: Path | None,
    resamples: int = 2000,
    seed: int = 0,
    progress: Progress | None = None,
) -> DemoRun:
    """Load the shipped data into ``db`` and compute every figure the demo prints.

    Args:
        db: the results database (created if missing; a re-run serves stored judgments).
        report: where to write the HTML report, or ``None`` for none.
        resamples: bootstrap resamples per interval.
        seed: seed of the bootstrap, the labelled sample and the cascade's split.
        progress: called with a short line before each step.

    Raises:
        MissingExtra: ``report`` was asked for and matplotlib is not installed (checked first).
    """
    say = progress or (lambda line: None)
    if report is not None:
        from judgecards.report.plots import require_matplotlib

        require_matplotlib()
    card = load_card(CARD)
    items = llmbar_items()
    comparisons = mt_bench_comparisons()
    cascade_db = db.with_name(f"{db.stem}-cascade{db.suffix or '.db'}")
    run = DemoRun(db=db, cascade_db=cascade_db, report=report)
    with Store(db) as store:
        say(f"storing {len(LLMBAR_EVALUATORS)} LLMBar judges × {len(items)} pairs × 2 orders")
        _load_llmbar(card, items, LLMBAR_EVALUATORS, store, audited=True)
        say(f"storing GPT-4's verdicts on {len(comparisons)} MT-Bench comparisons")
        _load_mt_bench(card, comparisons, store)
        say("computing agreement, kappa and position consistency")
        run.figures["llmbar"] = _llmbar_figures(store, items, LLMBAR_EVALUATORS, resamples)
        run.figures["mt_bench"], run.figures["estimate"] = _mt_bench_figures(
            store, comparisons, resamples, seed
        )
        say("fitting a jury of the six LLMBar judges (held out, 5 folds × 10)")
        run.figures["jury"] = _jury(store, items, LLMBAR_EVALUATORS)
        say("calibrating a cascade on half of LLMBar and running it on the other half")
        run.figures["cascade"] = _cascade(card, items, cascade_db, seed)
        if report is not None:
            say("writing the HTML report")
            from judgecards.report.html import render_html
            from judgecards.report.model import build_report

            built = build_report(store, n_resamples=resamples, seed=seed)
            report.write_text(render_html(built), encoding="utf-8")
    return run
