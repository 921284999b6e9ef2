"""docker-compose.yml and the Collector's configuration: valid, pinned, loopback-only, consistent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"


def _compose(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("docker-compose")
    if exe is None:
        pytest.fail(
            "docker-compose is missing, so docker-compose.yml cannot be validated: install it "
            "(Debian/Ubuntu: apt-get install docker-compose), or run `bash scripts/dev.sh test`, "
            "which installs it when run as root"
        )
    return subprocess.run([exe, "-f", str(COMPOSE), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def _config(*profiles: str) -> dict[str, Any]:
    flags = [arg for profile in profiles for arg in ("--profile", profile)]
    done = _compose(*flags, "config")
    assert done.returncode == 0, done.stderr
    loaded = yaml.safe_load(done.stdout)
    assert isinstance(loaded, dict)
    return loaded


def _expand(conf: Any, env: dict[str, str]) -> Any:
    """A Collector-style configuration with its ``${env:NAME:-default}`` references resolved from ``env``."""
    if isinstance(conf, dict):
        return {key: _expand(value, env) for key, value in conf.items()}
    if isinstance(conf, list):
        return [_expand(value, env) for value in conf]
    if isinstance(conf, str):
        return re.sub(r"\$\{env:(\w+)(?::-([^}]*))?\}", lambda m: env.get(m[1], m[2] or ""), conf)
    return conf


def test_compose_file_is_valid() -> None:
    done = _compose("config", "-q")
    assert done.returncode == 0, f"docker-compose config -q refused docker-compose.yml:\n{done.stderr}"
    assert done.stdout == ""


def test_a_broken_compose_file_is_refused(tmp_path: Path) -> None:
    exe = shutil.which("docker-compose")
    assert exe is not None
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  jaeger:\n    image: x\n    ports: 16686\n    portz: []\n")
    done = subprocess.run([exe, "-f", str(broken), "config", "-q"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "portz" in done.stderr  # the check the test above relies on is real


def test_jaeger_is_pinned_and_published_on_loopback() -> None:
    services = _config()["services"]
    assert services["collector"]["profiles"] == ["collector"]  # `docker compose up -d` starts Jaeger alone
    jaeger = services["jaeger"]
    image, _, tag = jaeger["image"].partition(":")
    assert image == "jaegertracing/jaeger" and tag.startswith("2.") and tag != "latest"
    published = {p.split(":", 2)[1]: p for p in jaeger["ports"]}
    assert set(published) == {"16686", "4317", "4318"}
    assert all(p.startswith("127.0.0.1:") for p in jaeger["ports"])


def test_the_collector_profile_forwards_to_jaeger_and_writes_a_tape() -> None:
    services = _config("collector")["services"]
    collector = services["collector"]
    image, _, tag = collector["image"].partition(":")
    assert image == "otel/opentelemetry-collector-contrib" and tag and tag != "latest"
    assert all(p.startswith("127.0.0.1:") for p in collector["ports"])
    mounts = dict(tuple(volume.split(":")[:2]) for volume in collector["volumes"])  # host → container
    (config_host,) = [h for h, c in mounts.items() if c.endswith(".yaml")]
    config_in_container = mounts[config_host]
    assert collector["command"] == [f"--config={config_in_container}"]
    conf = _expand(yaml.safe_load(Path(config_host).read_text()), collector.get("environment", {}))
    pipeline = conf["service"]["pipelines"]["traces"]
    assert set(pipeline["receivers"]) <= set(conf["receivers"])
    assert set(pipeline["exporters"]) <= set(conf["exporters"])
    to_jaeger = conf["exporters"]["otlp/jaeger"]
    assert to_jaeger["endpoint"] == "jaeger:4317" and "jaeger" in services
    file_path = Path(conf["exporters"]["file/tape"]["path"])
    out_dirs = {Path(c): Path(h) for h, c in mounts.items() if not c.endswith(".yaml")}
    assert file_path.parent in out_dirs, "the file exporter must write into the folder shared with the host"
    assert out_dirs[file_path.parent] == ROOT / "collector-out"
    protocols = conf["receivers"]["otlp"]["protocols"]
    listening = {protocols[name]["endpoint"].rsplit(":", 1)[1] for name in ("grpc", "http")}
    published = {port.split(":")[-1].split("/")[0] for port in collector["ports"]}
    assert listening == published == {"4317", "4318"}
