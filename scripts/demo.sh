#!/usr/bin/env bash
# Install ls-trajeval with the Label Studio server, the ML backend and the analysis stack (for the `report` the
# demo suggests) into .venv and run the demo (Ctrl-C stops both).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[server,ml,analysis]"
exec .venv/bin/ls-trajeval demo "$@"
