"""A process that ingests tapes into a store: ``python store_ingest_child.py STORE [--at EPOCH] TAPE...``.

Prints ``ingested PATH`` after each tape's transaction committed. With ``--at`` it waits until that
time first, so that several children start writing together.
"""

from __future__ import annotations

import sys
import time

from otel_agent_replay.store import open_store


def main(argv: list[str]) -> int:
    location, rest = argv[0], argv[1:]
    if rest[:1] == ["--at"]:
        start, rest = float(rest[1]), rest[2:]
        time.sleep(max(0.0, start - time.time()))
    with open_store(location) as store:
        for path in rest:
            store.ingest(path)
            print(f"ingested {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
