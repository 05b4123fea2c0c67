"""Pairwise A/B comparison: judging pairs in both orders, the report, and ratings.

=====================  ============================================================================
module                 what it holds
=====================  ============================================================================
``rules``              `resolve_pair` (the two-order rule) and `PairOutcome`
``compare``            `compare` / `compare_many` / `acompare_many`: both orders of every pair
                       through one bounded pool of a pairwise `Judge`; `pair_orders`,
                       `combine_orders` (what batch comparisons share with live ones)
``comparisons``        the records: `ComparisonResult`, `OrderJudgment`
``report``             `pairwise_report` / `comparison_report`: win-rates, sign test, position bias
``ratings``            `bradley_terry` and `elo` over ``(model_a, model_b, winner)`` outcomes
``stored``             the ``comparisons`` table: `save_comparisons`, `load_comparisons`,
                       `rank_stored`
=====================  ============================================================================

`compare`, `compare_many`, `acompare_many`, `ComparisonResult`, `comparison_report` and
`rank_stored` are exported from `judgecards` itself (``from judgecards import compare_many``); the
rest are imported from their module (``from judgecards.pairwise.ratings import elo``). This
package re-exports nothing, so a function is never confused with the module of the same
name (``judgecards.pairwise.compare`` is the module; ``judgecards.compare`` the function).
"""
