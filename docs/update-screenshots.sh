#!/usr/bin/env bash
# The screenshots in the docs are taken by the browser tests (headless Chromium driving the real
# pages), never drawn by hand: run those tests, then copy what they wrote into docs/assets/.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" -m pytest -q -p no:cacheprovider -m browser \
  tests/serve/test_labeling_browser.py tests/serve/test_reports.py
mkdir -p docs/assets/screenshots
for name in label-hostile-item report-served-pairwise; do
  cp "tests/serve/screenshots/$name.png" "docs/assets/screenshots/$name.png"
done
echo "copied to docs/assets/screenshots/"
