#!/usr/bin/env bash
# Creates, once, the virtual environment of bench/bench_suite.py (issue 20): pytest, the openai SDK,
# pytest-recording and vcrpy, as a user's CI would have them. bench_suite.py installs this repo's two
# distributions into it as wheels (not editable) at each run, so the code measured is the code here.
#
#   bash bench/suite/setup.sh            # create it if missing
#   bash bench/suite/setup.sh --force    # recreate it
#
# It lives outside the clone: ${AGENT_REPLAY_SUITE_VENV:-$HOME/.cache/otel-agent-replay/suite}.
set -euo pipefail

VENV=${AGENT_REPLAY_SUITE_VENV:-$HOME/.cache/otel-agent-replay/suite}
PYTHON=${PYTHON:-python3}
[ "${1:-}" = "--force" ] && rm -rf "$VENV"
if [ -f "$VENV/.installed" ]; then
  echo "suite venv: already set up in $VENV"
  exit 0
fi
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# The same pins as the dev extra where they overlap (openai, httpx), and pytest-recording's current release.
"$VENV/bin/pip" install -q --disable-pip-version-check \
  "pytest>=8" "openai>=3.50,<4" "httpx>=0.28,<0.29" "pytest-recording==0.14.1" "vcrpy>=6"
"$VENV/bin/pip" freeze --disable-pip-version-check > "$VENV/.installed"
echo "suite venv: ok ($VENV)"
