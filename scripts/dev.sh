#!/usr/bin/env bash
# Set-up and everyday commands. Each one builds the virtual environment it needs first.
#   bash scripts/dev.sh demo   record the demo agent to a tape and show it
#   bash scripts/dev.sh test   ruff, mypy and the whole test suite
#   bash scripts/dev.sh wheels build the two distributions' wheels into dist/ (to install in another project)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="${AGENT_REPLAY_VENV:-$root/.venv}"
# OpenTelemetry's own OTLP JSON file exporter pins other versions than the OTLP exporters
# the project needs, so the tests that replay its tapes run it from a venv of its own.
otlpfile_venv="${AGENT_REPLAY_OTLPFILE_VENV:-$venv-otlpfile}"
# Arize Phoenix, the real OTLP backend of the end-to-end tests, has dependencies of its own:
# it lives in its own venv too, and the tests start its `phoenix serve` on loopback ports.
phoenix_venv="${AGENT_REPLAY_PHOENIX_VENV:-$venv-phoenix}"
phoenix_spec="arize-phoenix==20.26.1"
# MCP 1.x beside the 2.x of the project's venv (one environment holds one mcp): the SDK installed from
# this checkout with mcp 1.x, for tests/integrations/test_mcp1.py.
mcp1_venv="${AGENT_REPLAY_MCP1_VENV:-$venv-mcp1}"
mcp1_spec="mcp>=1.20,<2"
# mitmproxy, the recording proxy of `record|replay TAPE -- CMD`: every release pins its dependencies tightly
# (11.0.2, the last for Python 3.11, wants h11<=0.14, which httpx 0.28 cannot use), so it lives in a venv of
# its own and the SDK runs its mitmdump (AGENT_REPLAY_MITMDUMP).
mitmproxy_venv="${AGENT_REPLAY_MITMPROXY_VENV:-$venv-mitmproxy}"
mitmproxy_spec="mitmproxy==11.0.2"
# The npm openai SDK for the Node agent of tests/proxy, cached outside the clone (Debian's Node 20 runs it).
node_openai_spec="openai@6.9.1"
# The Claude Agent SDK's agent of tests/proxy: the SDK (PyPI) runs the `claude` CLI (npm). 2.1.112 is the last
# CLI release that is JavaScript (cli.js, Node >= 18: Debian's Node 20 runs it; later ones are a native binary,
# and from 2.1.198 want Node 22); claude-agent-sdk 0.1.61 is the SDK release made for it, and it needs mcp 1.x
# (its in-process MCP tools use mcp 1's Server API), so it lives in a venv of its own beside the project's mcp 2.
node_claude_code_spec="@anthropic-ai/claude-code@2.1.112"
claude_venv="${AGENT_REPLAY_CLAUDE_VENV:-$venv-claude}"
claude_spec="claude-agent-sdk==0.1.61 mcp>=1.20,<2"
# google-adk, a whole agent framework of tests/integrations/test_google_adk.py: its releases pin google-genai<3
# and opentelemetry-sdk<=1.44, below the project's own pins, so it lives in a venv of its own with this
# checkout (AGENT_REPLAY_ADK_PYTHON), pinned exactly like the other large frameworks.
adk_venv="${AGENT_REPLAY_ADK_VENV:-$venv-adk}"
adk_spec="google-adk==2.13.0"
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
    if [ ! -x "$phoenix_venv/bin/phoenix" ] || [ "$(cat "$phoenix_venv/.installed" 2>/dev/null)" != "$phoenix_spec" ]; then
        "$python" -m venv "$phoenix_venv"
        "$phoenix_venv/bin/python" -m pip install --quiet "$phoenix_spec"
        echo "$phoenix_spec" > "$phoenix_venv/.installed"
    fi
    export AGENT_REPLAY_PHOENIX="$phoenix_venv/bin/phoenix"
    if [ ! -x "$mcp1_venv/bin/python" ] || [ "$(cat "$mcp1_venv/.installed" 2>/dev/null)" != "$mcp1_spec" ] \
        || [ pyproject.toml -nt "$mcp1_venv/.installed" ]; then
        "$python" -m venv "$mcp1_venv"
        "$mcp1_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            -e exporters/opentelemetry-exporter-agent-replay-tape -e . "$mcp1_spec"
        echo "$mcp1_spec" > "$mcp1_venv/.installed"
    fi
    export AGENT_REPLAY_MCP1_PYTHON="$mcp1_venv/bin/python"
    if [ ! -x "$adk_venv/bin/python" ] || [ "$(cat "$adk_venv/.installed" 2>/dev/null)" != "$adk_spec" ] \
        || [ pyproject.toml -nt "$adk_venv/.installed" ]; then
        "$python" -m venv "$adk_venv"
        "$adk_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            -e exporters/opentelemetry-exporter-agent-replay-tape -e . "$adk_spec"
        echo "$adk_spec" > "$adk_venv/.installed"
    fi
    export AGENT_REPLAY_ADK_PYTHON="$adk_venv/bin/python"
    if [ ! -x "$mitmproxy_venv/bin/mitmdump" ] || [ "$(cat "$mitmproxy_venv/.installed" 2>/dev/null)" != "$mitmproxy_spec" ]; then
        "$python" -m venv "$mitmproxy_venv"
        "$mitmproxy_venv/bin/python" -m pip install --quiet --disable-pip-version-check "$mitmproxy_spec"
        echo "$mitmproxy_spec" > "$mitmproxy_venv/.installed"
    fi
    export AGENT_REPLAY_MITMDUMP="$mitmproxy_venv/bin/mitmdump"
    if [ ! -x "$claude_venv/bin/python" ] || [ "$(cat "$claude_venv/.installed" 2>/dev/null)" != "$claude_spec" ]; then
        "$python" -m venv "$claude_venv"
        # shellcheck disable=SC2086 # the spec is two requirements
        "$claude_venv/bin/python" -m pip install --quiet --disable-pip-version-check $claude_spec
        echo "$claude_spec" > "$claude_venv/.installed"
    fi
    export AGENT_REPLAY_CLAUDE_PYTHON="$claude_venv/bin/python"
    ensure_node_packages
    # Jaeger v2, the Collector and gitleaks, built from their Go modules once per machine (cached outside the clone).
    bash "$root/scripts/servers.sh" build
    AGENT_REPLAY_JAEGER="$(bash "$root/scripts/servers.sh" path jaeger)"
    AGENT_REPLAY_OTELCOL="$(bash "$root/scripts/servers.sh" path otelcol)"
    AGENT_REPLAY_GITLEAKS="$(bash "$root/scripts/servers.sh" path gitleaks)"
    export AGENT_REPLAY_JAEGER AGENT_REPLAY_OTELCOL AGENT_REPLAY_GITLEAKS
    ensure_docker_compose
    ensure_postgresql
    ensure_chromium
}

# The proxy tests (tests/proxy) run a Node agent with the npm openai SDK and the Claude Agent SDK's `claude` CLI:
# Node and npm from Debian, each package installed once per machine under the cache folder scripts/servers.sh uses.
ensure_node_packages() {
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
        fi
        if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
            echo "node and npm are missing: the proxy tests run a Node agent (Debian/Ubuntu: sudo apt-get install nodejs npm)." >&2
            exit 1
        fi
    fi
    local cache="${AGENT_REPLAY_CACHE:-/var/cache/otel-agent-replay}"
    if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
        cache="${XDG_CACHE_HOME:-$HOME/.cache}/otel-agent-replay"
        mkdir -p "$cache"
    fi
    local dir
    dir="$(ensure_npm_package "$cache" "$node_openai_spec" openai)"
    export AGENT_REPLAY_NODE_MODULES="$dir/node_modules"
    dir="$(ensure_npm_package "$cache" "$node_claude_code_spec" @anthropic-ai/claude-code)"
    export AGENT_REPLAY_CLAUDE_CLI="$dir/node_modules/@anthropic-ai/claude-code/cli.js"
}

# ensure_npm_package CACHE SPEC NAME: SPEC installed in a folder of its own under CACHE (once); prints the folder.
ensure_npm_package() {
    local dir="$1/node-${2//[@\/]/-}"
    dir="${dir/node--/node-}"
    if [ ! -f "$dir/node_modules/$3/package.json" ]; then
        mkdir -p "$dir"
        [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
        npm install --prefix "$dir" --silent --no-audit --no-fund "$2" >/dev/null
    fi
    echo "$dir"
}

# The HTML page tests (tests/pages) open the pages in a real headless browser: Debian's chromium.
ensure_chromium() {
    local found
    found="$(command -v chromium || command -v chromium-browser || true)"
    if [ -z "$found" ]; then
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
            found="$(command -v chromium || true)"
        fi
        if [ -z "$found" ]; then
            echo "chromium is missing: the HTML page tests open the pages in a headless browser." >&2
            echo "Install it (Debian/Ubuntu: sudo apt-get install chromium), then run this again." >&2
            exit 1
        fi
    fi
    export AGENT_REPLAY_CHROMIUM="$found"
}

# The evidence-store tests start a throwaway PostgreSQL cluster on loopback (tests/pg_server.py)
# from Debian's postgresql package; they need its initdb and postgres, not a running service.
postgresql_bin() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
            echo "$dir"
            return
        fi
    done
}

ensure_postgresql() {
    local bindir
    bindir="$(postgresql_bin)"
    if [ -z "$bindir" ]; then
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
            # Only the binaries are needed: no default cluster is created or started.
            if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
                mkdir -p /etc/postgresql-common
                echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
            fi
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold postgresql >/dev/null
            bindir="$(postgresql_bin)"
        fi
        if [ -z "$bindir" ]; then
            echo "PostgreSQL is missing: the evidence-store tests run a PostgreSQL server on loopback." >&2
            echo "Install it (Debian/Ubuntu: sudo apt-get install postgresql), then run this again." >&2
            exit 1
        fi
    fi
    export AGENT_REPLAY_PG_BIN="$bindir"
}

# The compose file is checked with `docker-compose config` (Debian's docker-compose package).
ensure_docker_compose() {
    if command -v docker-compose >/dev/null 2>&1; then
        return
    fi
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
    else
        echo "docker-compose is missing: the tests validate docker-compose.yml with it." >&2
        echo "Install it (Debian/Ubuntu: sudo apt-get install docker-compose), then run this again." >&2
        exit 1
    fi
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
        "$venv/bin/ruff" format --check .
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
    wheels)
        # Both distributions: the SDK depends on the tape exporter, which is not on PyPI.
        "$python" -m pip wheel --quiet --no-deps --wheel-dir dist . exporters/opentelemetry-exporter-agent-replay-tape
        ls -1 dist/*.whl
        ;;
    *)
        echo "usage: bash scripts/dev.sh demo|test|wheels [args...]" >&2
        exit 2
        ;;
esac
