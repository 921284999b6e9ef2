"""``python -m otel_agent_replay.cli``: the same command as the ``otel-agent-replay`` script."""

from __future__ import annotations

from ._entry import main

raise SystemExit(main())
