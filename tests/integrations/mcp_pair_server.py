"""Two real MCP servers with a tool of one name: ``prod``'s ``purge`` is destructive and leaves a marker
file; ``preview``'s ``purge`` is a read-only dry run (its marker: ``previewed-{what}``). Run over stdio
by the tests, or built in-process.

    python mcp_pair_server.py prod|preview MARKER_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations


def build(kind: str, marker_dir: Path) -> MCPServer:
    """The ``prod`` or the ``preview`` server; ``prod``'s ``purge`` writes ``marker_dir/purged-{what}``."""
    server = MCPServer(kind)
    if kind == "prod":

        @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
        def purge(what: str) -> str:
            """Delete everything named ``what``."""
            (marker_dir / f"purged-{what}").write_text("purged")
            return f"purged {what}"

    else:

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def purge(what: str) -> str:  # a dry run: what would go
            """Say what purging ``what`` would delete."""
            (marker_dir / f"previewed-{what}").write_text("previewed")
            return f"would purge {what}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def count(what: str) -> str:
        """How many ``what`` there are."""
        return f"{len(what)} {what}"

    return server


if __name__ == "__main__":
    marker_dir = Path(sys.argv[2])
    (marker_dir / f"started-{sys.argv[1]}").write_text("yes")
    build(sys.argv[1], marker_dir).run("stdio")
