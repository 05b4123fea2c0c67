"""Tiered evaluation: cheap deterministic checks first, the judge only on what survives them.

A `TieredEval` runs its tiers in order. Each item goes through tier 1, and on to tier 2 only if
it passed tier 1, and so on; the judge (a `JudgeCheck`, always the last tier) sees only the
survivors, so every item an earlier tier decides is a judge call saved.

Every check gives each item one of four results (`CheckResult`):

==========  ==================================================================================
``pass``    go on to the next tier (after the last tier: the item passes)
``accept``  pass now, skipping the later tiers, the judge included (routing: e.g. an exact match
            needs no judge); only `MetricCheck` accepts, and only when given ``accept_min`` or
            ``accept_max``
``fail``    the item fails here and goes no further
``error``   the check could not be applied (a missing field, a value of the wrong type, a judge
            error record); the item ends here as an error, and is not sent on
==========  ==================================================================================

A tier with several checks applies all of them to each item (so every reason is reported) and
combines them: any ``fail`` → fail, else any ``error`` → error, else any ``accept`` → accept, else
pass. Nothing is dropped: the `TieredReport` holds one `ItemOutcome` per input item, in input
order, naming the tier that decided it and why.

=================  ===============================================================================
check              passes when
=================  ===============================================================================
`RegexCheck`       a field matches ``match`` and does not match ``forbid`` (``re.search``)
`LengthCheck`      a field's length in characters or words is within ``[min, max]``
`JsonCheck`        a field is JSON, optionally valid against a JSON Schema or a pydantic model
`MetricCheck`      a metric of `judgecards.metrics` against a reference field is within bounds
`JudgeCheck`       a `judgecards.Judge` verdict is allowed and its scores are within bounds
=================  ===============================================================================

Any object with a ``name`` and a ``check(item) -> CheckResult`` method can stand in a `Tier` too.

==============  ===================================================================================
module          what it holds
==============  ===================================================================================
``checks``      `CheckResult`, the `Check` protocol and the deterministic checks
``pipeline``    `Tier`, `JudgeCheck` and `TieredEval`
``report``      `TieredReport`, `ItemOutcome`, `TierStats`
``plan``        `EvalPlan`: the judge tier's projected cost before any call (an upper bound)
``config``      the YAML/TOML config of ``judgecards eval`` (`load_config`, `build_pipeline`)
==============  ===================================================================================
"""

from judgecards.tiered.checks import (
    Check,
    CheckResult,
    JsonCheck,
    LengthCheck,
    MetricCheck,
    RegexCheck,
    metric_check_names,
)
from judgecards.tiered.pipeline import JudgeCheck, Tier, TieredEval
from judgecards.tiered.plan import EvalPlan
from judgecards.tiered.report import ItemOutcome, TieredReport, TierStats

__all__ = [
    "Check",
    "CheckResult",
    "EvalPlan",
    "ItemOutcome",
    "JsonCheck",
    "JudgeCheck",
    "LengthCheck",
    "MetricCheck",
    "RegexCheck",
    "Tier",
    "TierStats",
    "TieredEval",
    "TieredReport",
    "metric_check_names",
]
