#!/usr/bin/env bash
# Creates, once, one virtual environment per peer for bench/bench_peers.py (issue 15).
#
#   bash bench/peers/setup.sh            # create the missing ones
#   bash bench/peers/setup.sh --force    # recreate all of them
#
# The environments live outside the clone, under
# ${AGENT_REPLAY_PEERS_DIR:-$HOME/.cache/otel-agent-replay/peers}/<peer>. Each holds one peer's
# package at a pinned version and the real OpenTelemetry SDK its pins resolve to; they are
# separate because the peers pin OpenTelemetry differently. A failed install names the peer and
# the script goes on with the others; the exit status is 1 if any failed.
set -u

PEERS_DIR=${AGENT_REPLAY_PEERS_DIR:-$HOME/.cache/otel-agent-replay/peers}
PYTHON=${PYTHON:-python3}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

# peer name | pip requirements (pinned; they install on Python 3.11) | installed after with --no-deps.
#
# traceloop-sdk 0.62.4 lists ~30 per-LLM-library instrumentations unpinned beside
# opentelemetry-instrumentation-logging>=0.59b0, and pip's resolver gives up on them
# (ResolutionImpossible, and over 5 minutes with the 0.59b0 set pinned). So it is installed with
# --no-deps on top of its own core requirements, with OpenTelemetry pinned to the matching
# 1.38.0 / 0.59b0 set. The per-library instrumentations are left out: Traceloop.init only loads one
# when its library is installed, and none is here, so the measured path is the same.
PEERS=(
  "openinference|openinference-instrumentation==0.1.72 opentelemetry-sdk|"
  "traceloop|opentelemetry-sdk==1.38.0 opentelemetry-api==1.38.0 opentelemetry-exporter-otlp-proto-http==1.38.0 opentelemetry-exporter-otlp-proto-grpc==1.38.0 opentelemetry-instrumentation==0.59b0 opentelemetry-instrumentation-threading==0.59b0 opentelemetry-instrumentation-logging==0.59b0 opentelemetry-semantic-conventions-ai>=0.5.1,<0.6 colorama>=0.4.6,<0.5 cuid>=0.4,<0.5 deprecated>=1.2.14,<2 jinja2>=3.1.5,<4 pydantic>=1 tenacity>=8.2.3,<10 aiohttp>=3.11.11,<4 httpx|traceloop-sdk==0.62.4"
  "logfire|logfire==5.4.0|"
)

mkdir -p "$PEERS_DIR"
failed=()
for entry in "${PEERS[@]}"; do
  name=${entry%%|*}
  rest=${entry#*|}
  reqs=${rest%%|*}
  nodeps=${rest#*|}
  venv="$PEERS_DIR/$name"
  if [ "$FORCE" = 0 ] && [ -f "$venv/.installed" ]; then
    echo "peer $name: already set up in $venv"
    continue
  fi
  echo "peer $name: installing $reqs${nodeps:+ then --no-deps $nodeps} into $venv"
  rm -rf "$venv"
  # shellcheck disable=SC2086  # $reqs is a list of requirements
  if "$PYTHON" -m venv "$venv" \
    && "$venv/bin/pip" install -q --disable-pip-version-check $reqs \
    && { [ -z "$nodeps" ] || "$venv/bin/pip" install -q --disable-pip-version-check --no-deps $nodeps; } \
    && "$venv/bin/python" -c "import opentelemetry.sdk.trace"; then
    "$venv/bin/pip" freeze --disable-pip-version-check > "$venv/.installed"
    echo "peer $name: ok"
  else
    echo "peer $name: INSTALL FAILED (the others go on; bench_peers.py skips it)" >&2
    failed+=("$name")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed peers: ${failed[*]}" >&2
  exit 1
fi
echo "all peers set up under $PEERS_DIR"
