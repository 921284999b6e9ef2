"""Size caps that keep JSON valid, and the content-addressed blob store."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from otel_agent_replay.capture._payload import BlobStore, cap_json, shorten_strings


def test_short_values_are_returned_as_they_are() -> None:
    value = {"a": ["x" * 10, 3, None]}
    assert shorten_strings(value, 16) == (value, False)
    assert shorten_strings(value, 16)[0] is value


def test_long_strings_are_cut_with_length_and_hash() -> None:
    long_a, long_b = "a" * 100 + "1", "a" * 100 + "2"
    (cut_a, changed), (cut_b, _) = shorten_strings({"k": [long_a]}, 20), shorten_strings({"k": [long_b]}, 20)
    assert changed
    assert cut_a["k"][0].startswith("a" * 20 + "…[truncated 101 chars sha256:")
    assert cut_a != cut_b  # same prefix, different strings: different marks


def test_over_cap_json_becomes_a_json_string_of_its_start() -> None:
    text = orjson.dumps(list(range(1000))).decode()
    capped, changed = cap_json(text, 100)
    assert changed and isinstance(orjson.loads(capped), str)
    assert orjson.loads(capped).startswith("[0,1,2,3")
    assert cap_json("[1]", 100) == ("[1]", False)


def test_cap_counts_bytes_not_characters() -> None:
    text = orjson.dumps("é" * 60).decode()  # 62 characters, 122 bytes
    assert cap_json(text, 100)[1] is True


def test_blob_store_names_files_by_hash_and_stays_in_its_root(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    digest = store.put('{"big":true}')
    assert digest == hashlib.sha256(b'{"big":true}').hexdigest()
    assert (tmp_path / "blobs" / f"{digest}.json").read_text() == '{"big":true}'
    assert store.put('{"big":true}') == digest  # stored once
    assert store.get(digest) == '{"big":true}'
    assert [p.name for p in (tmp_path / "blobs").iterdir()] == [f"{digest}.json"]
    for bad in ("../../etc/passwd", "A" * 64, digest[:-1]):
        with pytest.raises(ValueError, match="not a sha256"):
            store.path_for(bad)
