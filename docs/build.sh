#!/usr/bin/env bash
# The documentation site: build it with warnings as errors (every gallery example runs), then open
# every built page in headless Chromium (docs/check_site.py). Needs: pip install -e ".[docs]" and
# Debian's chromium (apt-get install -y chromium). PYTHON selects the interpreter (default: python).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
export OPENBLAS_NUM_THREADS=1 MPLBACKEND=Agg
"$PY" -m sphinx -W --keep-going -b html docs docs/_build/html
"$PY" docs/check_site.py docs/_build/html
