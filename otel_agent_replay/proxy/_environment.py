"""How a child is pointed at the proxy: its environment, and the certificates it and the proxy trust.

- Proxy variables, for the clients that honour them (Python's, curl, Go's, most of Node's but its
  ``fetch``): ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` in both cases, and ``NO_PROXY`` cleared,
  so loopback goes through the proxy too (local fakes are sealed like the internet).
- Provider base-URL variables, for the clients that do not (Node 20's ``fetch``, which the npm SDKs
  use): each points at a reverse listener of the proxy that stands for the upstream it named, the
  user's value or the provider's default, path kept (``OPENAI_BASE_URL=http://127.0.0.1:PORT/v1``).
- Trust: the run's CA, trusted by that child alone, in a bundle merged with the system's roots and
  with the bundles the user's own environment named (so passthrough hosts and the user's private
  CAs still verify): ``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``; Node adds
  ``NODE_EXTRA_CA_CERTS`` to its own roots. The proxy verifies upstreams against the system's roots
  and the user's bundles, without the run's CA.
"""

from __future__ import annotations

import os
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
BUNDLE_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
NODE_CA_VARIABLE = "NODE_EXTRA_CA_CERTS"


@dataclass(frozen=True, slots=True)
class BaseUrl:
    """A provider's base-URL variable and the upstream it means when unset."""

    variable: str
    default: str
    scheme_optional: bool = False
    """The variable may be ``host:port`` with no scheme (``OLLAMA_HOST``)."""


BASE_URLS: tuple[BaseUrl, ...] = (
    BaseUrl("OPENAI_BASE_URL", "https://api.openai.com/v1"),
    BaseUrl("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    BaseUrl("GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
    BaseUrl("OLLAMA_HOST", "http://127.0.0.1:11434", scheme_optional=True),
)
"""The base-URL variables the providers' SDKs read (Python's and npm's alike)."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """What one base-URL variable stood for: its origin (one reverse listener) and path."""

    variable: str
    origin: str
    path: str


def upstreams(env: Mapping[str, str]) -> tuple[Upstream, ...]:
    """Each base-URL variable's upstream: the user's value, else the provider's default."""
    out: list[Upstream] = []
    for base in BASE_URLS:
        value = (env.get(base.variable) or "").strip() or base.default
        if base.scheme_optional and "://" not in value:
            value = "http://" + value
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue  # not a URL we can stand for: left as the user set it
        origin = f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"
        out.append(Upstream(base.variable, origin, parts.path.rstrip("/")))
    return tuple(out)


def system_roots() -> str:
    """The system's root certificates (PEM), else certifi's."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and os.path.isfile(candidate):
            return Path(candidate).read_text("utf-8", "replace")
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with mitmproxy
        return ""
    return Path(certifi.where()).read_text("utf-8", "replace")


def _user_bundles(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    texts: list[str] = []
    seen: set[str] = set()
    for name in names:
        path = env.get(name)
        if path and path not in seen and os.path.isfile(path):
            seen.add(path)
            texts.append(Path(path).read_text("utf-8", "replace"))
    return "\n".join(texts)


def write_upstream_trust(folder: Path, env: Mapping[str, str]) -> Path:
    """The roots the proxy verifies upstreams with: the system's and the user's bundles."""
    path = folder / "upstream-roots.pem"
    path.write_text(system_roots() + "\n" + _user_bundles(env, (*BUNDLE_VARIABLES, NODE_CA_VARIABLE)), "utf-8")
    return path


def pointed(
    env: Mapping[str, str],
    *,
    port: int,
    reverse: Mapping[str, int],
    trust: Mapping[str, str],
    credentials: str = "",
) -> dict[str, str]:
    """``env`` pointed at a running proxy: its proxy variables (with ``credentials``, ``user:password``, that
    name the child to the proxy), the base-URL variables whose upstream has a reverse listener (others stay
    as they are: the proxy variables still carry a client that honours them), and the bundles ``trust``
    names (variable → path)."""
    out = dict(env)
    proxy = f"http://{credentials + '@' if credentials else ''}127.0.0.1:{port}"
    for name in PROXY_VARIABLES:
        out[name] = proxy
    for name in NO_PROXY_VARIABLES:
        out[name] = ""
    for upstream in upstreams(env):
        listener = reverse.get(upstream.origin)
        if listener is not None:
            out[upstream.variable] = f"http://127.0.0.1:{listener}{upstream.path}"
    out.update(trust)
    return out


def child_environment(
    env: Mapping[str, str], *, port: int, reverse: Mapping[str, int], ca_cert: Path, folder: Path
) -> dict[str, str]:
    """``env`` with the child pointed at the proxy on ``port`` (and its reverse listeners) and trusting
    the run's CA (``ca_cert``); the bundles are written in ``folder``."""
    out = dict(env)
    proxy = f"http://127.0.0.1:{port}"
    for name in PROXY_VARIABLES:
        out[name] = proxy
    for name in NO_PROXY_VARIABLES:
        out[name] = ""
    for upstream in upstreams(env):
        out[upstream.variable] = f"http://127.0.0.1:{reverse[upstream.origin]}{upstream.path}"
    ca = ca_cert.read_text("utf-8")
    bundle = folder / "child-roots.pem"
    bundle.write_text(system_roots() + "\n" + _user_bundles(env, BUNDLE_VARIABLES) + "\n" + ca, "utf-8")
    for name in BUNDLE_VARIABLES:
        out[name] = str(bundle)
    node = folder / "child-node-extra.pem"
    node.write_text(_user_bundles(env, (NODE_CA_VARIABLE,)) + "\n" + ca, "utf-8")
    out[NODE_CA_VARIABLE] = str(node)
    return out
