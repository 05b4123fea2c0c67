#!/usr/bin/env bash
# The main job, end to end on a fresh machine: create an environment, install judgecards, judge
# the example items with the reference card, run a tiered evaluation and a pairwise A/B with a
# ranking, and print each summary.
#
# The judge model is chosen from what this machine has:
#   JUDGE_MODEL if set (e.g. openai:gpt-4o, anthropic:claude-sonnet-5-5, openai:qwen2.5:7b);
#   else anthropic:claude-sonnet-5-5 when ANTHROPIC_API_KEY is set;
#   else openai:gpt-4o-mini when OPENAI_API_KEY or OPENAI_BASE_URL is set;
#   else the offline mock provider, with a banner saying its scores are synthetic; and then,
#   with no key, `judgecards demo` runs first: real judges' recorded verdicts against real
#   human labels (LLMBar, MT-Bench), offline, so the first numbers you see are real ones.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/judgecards ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -e .
fi

if [ -n "${JUDGE_MODEL:-}" ]; then
  model=$JUDGE_MODEL
elif [ -n "${ANTHROPIC_API_KEY:-}" ]; then
  model=anthropic:claude-sonnet-5-5
elif [ -n "${OPENAI_API_KEY:-}" ] || [ -n "${OPENAI_BASE_URL:-}" ]; then
  model=openai:gpt-4o-mini
else
  model=mock:judge
fi

mkdir -p out
if [ "$model" = mock:judge ]; then
  echo "== no API key set: first, real judges against real people (judgecards demo, offline)"
  rm -f out/demo.db out/demo-cascade.db  # the demo's own scratch databases: a fresh run
  report=()
  # The HTML report needs matplotlib (pip install 'judgecards[serve]'); the figures do not.
  .venv/bin/python -c "import matplotlib" 2>/dev/null || report=(--no-report)
  .venv/bin/judgecards demo --db out/demo.db ${report[@]+"${report[@]}"}
  echo
  echo "== then the walk-through with the mock provider (synthetic scores)"
fi
export JUDGECARDS_DB=${JUDGECARDS_DB:-out/judgecards.db}
.venv/bin/judgecards cards list
.venv/bin/judgecards score --card reference --model "$model" \
  examples/reference_items.jsonl --output out/reference_results.jsonl --concurrency 8
echo
echo "== tiered evaluation: format and metric tiers first, the judge only on survivors"
.venv/bin/judgecards eval examples/eval_config.yaml --model "$model" --output out/eval_results.jsonl
echo
echo "== pairwise A/B: every pair judged in both orders (q6 and q7 are on one side only, and reported)"
.venv/bin/judgecards compare --card pairwise --model "$model" \
  examples/outputs_a.jsonl examples/outputs_b.jsonl --output out/comparisons.jsonl
.venv/bin/judgecards rank --card pairwise --model "$model"
echo "results: out/reference_results.jsonl, out/eval_results.jsonl, out/comparisons.jsonl   database: $JUDGECARDS_DB"
