"""Temporary files beside an output (`judgecards.storage.temporary_files`): a run killed while writing
leaves one behind, and the next successful write of that output removes it, never a file of a
writer still running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from judgecards.cli import cli
from judgecards.storage import create_beside, sweep_beside
from tests.builders import REPO

# Writes the output through the CLI's OutputFile and stops in the middle, after saying so.
KILLED_WRITER = """
import sys
from pathlib import Path
from judgecards.cli._output import OutputFile

def write(handle):
    handle.write(b"half a line")
    handle.flush()
    print("writing", flush=True)
    sys.stdin.readline()  # killed while waiting here

OutputFile(Path(sys.argv[1])).write_with(write)
"""


def leftovers(output: Path) -> list[str]:
    return sorted(p.name for p in output.parent.iterdir() if p.name.startswith(f".{output.name}."))


def test_the_next_successful_run_removes_the_temporary_file_of_a_killed_one(
    tmp_path: Path,
) -> None:
    output = tmp_path / "out.jsonl"
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(output)], cwd=REPO, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    ) as writer:  # fmt: skip
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert len(leftovers(output)) == 1 and not output.exists()  # what SIGKILL leaves

    items = tmp_path / "items.jsonl"
    item = {"id": "q1", "question": "Capital?", "gold_answer": "Paris", "model_output": "Paris"}
    items.write_text(json.dumps(item) + "\n")
    result = CliRunner().invoke(cli, [
        "score", "--card", "reference", "--model", "mock:judge", str(items),
        "--output", str(output), "--db", str(tmp_path / "runs.db"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(output.read_text().splitlines()) == 1
    assert leftovers(output) == []  # was: the killed run's .out.jsonl.*.tmp stayed


def test_a_running_writers_temporary_file_is_left_alone(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    descriptor, name = create_beside(output)  # this process: still running
    os.close(descriptor)
    assert sweep_beside(output) == [] and Path(name).exists()
    assert f".out.jsonl.{os.getpid()}-" in name
