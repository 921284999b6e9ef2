"""A real MCP server over stdio (run as a process by the tests): a read-only ``lookup`` and a destructive
``delete_customer`` that leaves a marker file, so a test can tell whether it ran.

    python mcp_crm_server.py MARKER_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

marker_dir = Path(sys.argv[1])
server = MCPServer("crm")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(customer: str) -> str:
    """Find a customer."""
    return f"{customer}: gold tier"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def delete_customer(customer: str) -> str:
    """Delete a customer."""
    (marker_dir / f"deleted-{customer}").write_text("deleted")
    return f"deleted {customer}"


if __name__ == "__main__":
    (marker_dir / "started").write_text("yes")
    server.run("stdio")
