#!/usr/bin/env bash
# Set-up and everyday commands. Each one builds the virtual environment it needs first.
#   bash scripts/dev.sh demo   record the demo agent to a tape and show it
#   bash scripts/dev.sh test   ruff, mypy and the whole test suite
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="${AGENT_REPLAY_VENV:-$root/.venv}"
# OpenTelemetry's own OTLP JSON file exporter pins other versions than the OTLP exporters
# the project needs, so the tests that replay its tapes run it from a venv of its own.
otlpfile_venv="${AGENT_REPLAY_OTLPFILE_VENV:-$venv-otlpfile}"
python="${PYTHON:-python3}"

ensure_venv() {
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    local stamp="$venv/.installed"
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] \
        || [ exporters/opentelemetry-exporter-agent-replay-tape/pyproject.toml -nt "$stamp" ]; then
        "$venv/bin/python" -m pip install --quiet --upgrade pip
        "$venv/bin/python" -m pip install --quiet \
            -e exporters/opentelemetry-exporter-agent-replay-tape -e ".[dev]"
        touch "$stamp"
    fi
}

ensure_test_tools() {
    if [ ! -x "$otlpfile_venv/bin/python" ] || [ ! -f "$otlpfile_venv/.installed" ]; then
        "$python" -m venv "$otlpfile_venv"
        "$otlpfile_venv/bin/python" -m pip install --quiet opentelemetry-sdk opentelemetry-exporter-otlp-json-file
        touch "$otlpfile_venv/.installed"
    fi
    export AGENT_REPLAY_OTLPFILE_PYTHON="$otlpfile_venv/bin/python"
}

cmd="${1:-}"
shift || true
case "$cmd" in
    demo)
        ensure_venv
        exec "$venv/bin/otel-agent-replay" demo "$@"
        ;;
    test)
        ensure_venv
        ensure_test_tools
        "$venv/bin/ruff" check .
        "$venv/bin/mypy"
        set +e
        "$venv/bin/python" -m pytest "$@"
        status=$?
        set -e
        if [ "$status" -eq 5 ]; then
            echo "pytest collected no tests: that is a failure here" >&2
            exit 1
        fi
        exit "$status"
        ;;
    *)
        echo "usage: bash scripts/dev.sh demo|test [args...]" >&2
        exit 2
        ;;
esac
