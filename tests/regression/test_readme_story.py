"""The README's evidence-store story runs as printed, line by line, through the installed command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _story() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- evidence-story -->", 1)[1].split("```bash own-test\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readme_story_runs_as_printed(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # a clone's root, without writing into this one
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    lines = _story()
    assert len(lines) == 6
    outputs = []
    for line in lines:
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        expected = 1 if "--threshold" in line else 0
        assert done.returncode == expected, f"{line}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    assert "5 out-of-bounds call(s)" in outputs[3]
    assert "#### `2` against `1`" in outputs[4] and "| out_of_bounds_calls | 0 | 5 |" in outputs[4]
    assert "❌ **regressed**" in outputs[5]
    assert len(list((tmp_path / "tapes" / "golden").glob("*.jsonl"))) == 6
