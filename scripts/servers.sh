#!/usr/bin/env bash
# Builds the real trace servers the end-to-end tests run, once per machine, from their Go modules:
#   Jaeger v2 (github.com/jaegertracing/jaeger/cmd/jaeger) and a Collector made by the OpenTelemetry
#   Collector Builder with exactly the components the project uses; and gitleaks
#   (github.com/zricethezav/gitleaks/v8), the secret scanner a test runs over a tape of stand-ins.
#   bash scripts/servers.sh build           build what is missing (a cached build is a no-op)
#   bash scripts/servers.sh path NAME       print the binary's path (NAME: jaeger, otelcol or gitleaks)
#   bash scripts/servers.sh versions        print the pinned versions (docker-compose.yml uses the same)
# Binaries live outside the clone, under ${AGENT_REPLAY_CACHE:-/var/cache/otel-agent-replay} (or
# ~/.cache/otel-agent-replay when that is not writable), one folder per version and recipe, so a bump
# rebuilds and a second run reuses. A failed build names the step and keeps its log there.
set -euo pipefail

# Jaeger's Go module has no /v2 suffix, so its v2 releases are fetched by the v1 tag of the same commit:
# v1.76.0 is Jaeger v2.13.0 (see its CHANGELOG: "v1.76.0 / v2.13.0"), image jaegertracing/jaeger:2.13.0.
jaeger_module_version="v1.76.0"
jaeger_version="2.13.0"
# The Collector versions Jaeger 2.13.0 itself is built on: core v0.140.0 (stable modules v1.46.0) and
# contrib v0.140.1, so both servers speak the same pdata; image otel/opentelemetry-collector-contrib:0.140.1.
collector_version="0.140.0"
collector_stable_version="1.46.0"
contrib_version="0.140.1"
otlpjsonfile_module="github.com/open-telemetry/opentelemetry-collector-contrib/receiver/otlpjsonfilereceiver"
otlpjsonfile_sum="h1:wF2S4zKRk4B5tHvaZWfL5MUbqxAUeeDom5fc5HbXo4I="
otlpjsonfile_gomod_sum="h1:NnpMwST9DlpPTAU9gqD3ch3Cs27EIQ1UYd0f4QroAsw="
# gitleaks' module path is its author's account (zricethezav), not github.com/gitleaks: `go list -m` says so.
gitleaks_module="github.com/zricethezav/gitleaks/v8"
gitleaks_version="v8.30.1"
go_jobs="${AGENT_REPLAY_GO_JOBS:-2}"

cache="${AGENT_REPLAY_CACHE:-/var/cache/otel-agent-replay}"
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/otel-agent-replay"
    mkdir -p "$cache"
fi

collector_manifest() {
    local output_path="$1"
    cat <<EOF
dist:
  name: otelcol-agent-replay
  description: OpenTelemetry Collector for otel-agent-replay (OTLP and tape files in, OTLP and tape files out)
  version: ${collector_version}
  output_path: ${output_path}
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v${collector_version}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/receiver/otlpjsonfilereceiver v${contrib_version}
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlpexporter v${collector_version}
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter v${collector_version}
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v${contrib_version}
providers:
  - gomod: go.opentelemetry.io/collector/confmap/provider/envprovider v${collector_stable_version}
  - gomod: go.opentelemetry.io/collector/confmap/provider/fileprovider v${collector_stable_version}
EOF
}

# The Collector's folder is keyed by the recipe too, so adding a component rebuilds.
collector_key() {
    collector_manifest OUT | sha256sum | cut -c1-12
}

binary_path() {
    case "$1" in
        jaeger) echo "$cache/jaeger-$jaeger_version/jaeger" ;;
        otelcol) echo "$cache/otelcol-$collector_version-$(collector_key)/otelcol-agent-replay" ;;
        gitleaks) echo "$cache/gitleaks-$gitleaks_version/gitleaks" ;;
        *)
            echo "servers.sh: unknown server '$1' (jaeger, otelcol or gitleaks)" >&2
            return 2
            ;;
    esac
}

# run_step LOG STEP COMMAND...: runs one build step into LOG; on failure says which step and where the log is.
run_step() {
    local log="$1" step="$2"
    shift 2
    echo "== $step" >>"$log"
    if ! "$@" >>"$log" 2>&1; then
        echo "servers.sh: $step failed; the log is $log. Its end:" >&2
        tail -n 25 "$log" >&2
        return 1
    fi
}

build_jaeger() {
    local out dir work log started
    out="$(binary_path jaeger)"
    [ -x "$out" ] && return 0
    dir="$(dirname "$out")"
    mkdir -p "$cache/logs"
    log="$cache/logs/jaeger-$jaeger_version.log"
    : >"$log"
    started=$SECONDS
    echo "servers.sh: building Jaeger $jaeger_version (log: $log)" >&2
    work="$(mktemp -d "$cache/.jaeger-build.XXXXXX")"
    # The module declares a replace directive, which `go install module@version` refuses: download the
    # module's source at the pinned version and build its cmd/jaeger in place (the source is read-only).
    run_step "$log" "step 1/2 (go mod download github.com/jaegertracing/jaeger@$jaeger_module_version)" \
        go mod download -json "github.com/jaegertracing/jaeger@$jaeger_module_version"
    local src
    src="$(go env GOMODCACHE)/github.com/jaegertracing/jaeger@$jaeger_module_version"
    run_step "$log" "step 2/2 (go build ./cmd/jaeger)" \
        env -C "$src" GOFLAGS=-mod=readonly go build -p "$go_jobs" -trimpath \
        -ldflags "-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=v$jaeger_version" \
        -o "$work/jaeger" ./cmd/jaeger
    mkdir -p "$dir"
    mv "$work/jaeger" "$out"
    rm -rf "$work"
    echo "servers.sh: Jaeger $jaeger_version built in $((SECONDS - started)) s: $out" >&2
}

build_otelcol() {
    local out dir work log started
    out="$(binary_path otelcol)"
    [ -x "$out" ] && return 0
    dir="$(dirname "$out")"
    mkdir -p "$cache/logs"
    log="$cache/logs/otelcol-$collector_version.log"
    : >"$log"
    started=$SECONDS
    echo "servers.sh: building the Collector $collector_version (log: $log)" >&2
    work="$(mktemp -d "$cache/.otelcol-build.XXXXXX")"
    run_step "$log" "step 1/4 (go install go.opentelemetry.io/collector/cmd/builder@v$collector_version)" \
        env GOBIN="$work/bin" go install -p "$go_jobs" "go.opentelemetry.io/collector/cmd/builder@v$collector_version"
    collector_manifest "$work/dist" >"$work/manifest.yaml"
    run_step "$log" "step 2/4 (builder: generate the sources)" \
        "$work/bin/builder" --config "$work/manifest.yaml" --skip-get-modules --skip-compilation
    # The builder's own `go mod tidy` fails on modules that only the components' tests import and the
    # module proxy does not serve; `-e` resolves what the build needs and leaves those out.
    # The checksum database has no entry for the otlpjsonfile receiver at this version, so its
    # checksums are pinned here instead and checked below.
    run_step "$log" "step 3/4 (go mod tidy: resolve and download the modules)" \
        env -C "$work/dist" GONOSUMDB="$otlpjsonfile_module" go mod tidy -e -compat=1.24
    local line
    for line in "$otlpjsonfile_module v$contrib_version $otlpjsonfile_sum" \
        "$otlpjsonfile_module v$contrib_version/go.mod $otlpjsonfile_gomod_sum"; do
        if ! grep -qxF "$line" "$work/dist/go.sum"; then
            echo "servers.sh: step 3/4 (go mod tidy): the checksum of $otlpjsonfile_module is not the pinned one;" \
                "expected the go.sum line: $line (see $work/dist/go.sum)" >&2
            return 1
        fi
    done
    run_step "$log" "step 4/4 (builder: go build)" \
        env GOFLAGS="-p=$go_jobs" "$work/bin/builder" --config "$work/manifest.yaml" --skip-generate --skip-get-modules
    mkdir -p "$dir"
    cp "$work/manifest.yaml" "$dir/manifest.yaml"
    mv "$work/dist/otelcol-agent-replay" "$out"
    rm -rf "$work"
    echo "servers.sh: the Collector $collector_version built in $((SECONDS - started)) s: $out" >&2
}

build_gitleaks() {
    local out work log started
    out="$(binary_path gitleaks)"
    [ -x "$out" ] && return 0
    mkdir -p "$cache/logs"
    log="$cache/logs/gitleaks-$gitleaks_version.log"
    : >"$log"
    started=$SECONDS
    echo "servers.sh: building gitleaks $gitleaks_version (log: $log)" >&2
    work="$(mktemp -d "$cache/.gitleaks-build.XXXXXX")"
    run_step "$log" "step 1/1 (go install $gitleaks_module@$gitleaks_version)" \
        env GOBIN="$work/bin" go install -p "$go_jobs" \
        -ldflags "-s -w -X $gitleaks_module/version.Version=$gitleaks_version" "$gitleaks_module@$gitleaks_version"
    mkdir -p "$(dirname "$out")"
    mv "$work/bin/gitleaks" "$out"
    rm -rf "$work"
    echo "servers.sh: gitleaks $gitleaks_version built in $((SECONDS - started)) s: $out" >&2
}

cmd="${1:-build}"
case "$cmd" in
    build)
        if ! command -v go >/dev/null 2>&1; then
            echo "servers.sh: go is missing; the tests build Jaeger and the Collector from their Go modules." >&2
            echo "Install Go 1.24 or newer (Debian: apt-get install golang), then run this again." >&2
            exit 1
        fi
        # One build at a time per cache (two CI runs on one machine wait for each other).
        exec 9>"$cache/.lock"
        flock 9
        rm -rf "$cache"/.jaeger-build.* "$cache"/.otelcol-build.* "$cache"/.gitleaks-build.*
        build_jaeger
        build_otelcol
        build_gitleaks
        ;;
    path)
        binary_path "${2:-}"
        ;;
    versions)
        echo "jaeger=$jaeger_version"
        echo "jaeger_module=$jaeger_module_version"
        echo "collector=$collector_version"
        echo "collector_contrib=$contrib_version"
        echo "gitleaks=$gitleaks_version"
        ;;
    *)
        echo "usage: bash scripts/servers.sh build|path jaeger|path otelcol|path gitleaks|versions" >&2
        exit 2
        ;;
esac
