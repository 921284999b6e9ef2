"""A real MCP 1.x server over stdio (FastMCP), run as a process by ``agent.py``: a read-only ``lookup``
and a destructive ``delete_customer`` that leaves a marker file, so the test can tell whether it ran.

    python crm_server.py MARKER_DIR            # over stdio
    python crm_server.py MARKER_DIR PORT       # streamable HTTP on 127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

marker_dir = Path(sys.argv[1])
port = int(sys.argv[2]) if len(sys.argv) > 2 else None
server = FastMCP("crm", host="127.0.0.1", port=port or 8000)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(customer: str) -> str:
    """Find a customer."""
    return f"{customer}: gold tier"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def delete_customer(customer: str) -> str:
    """Delete a customer."""
    (marker_dir / f"deleted-{customer}").write_text("deleted")
    return f"deleted {customer}"


if __name__ == "__main__":
    (marker_dir / "started").write_text("yes")
    server.run("streamable-http" if port else "stdio")
