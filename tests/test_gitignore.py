"""The folders the documented commands write in the clone (``qahub demo``'s default ``--out``, the exports, the
harness task folder, lm-eval / lighteval / inspect runs, reports) are ignored by git, and no committed file is."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRITTEN = ["demo-output", "exports/jemhopqa", "qahub-tasks", "runs/a", "results", "logs/inspect", "report",
           "report-a"]


def git(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def work_tree():
    if shutil.which("git") is None or git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        pytest.skip("not a git work tree (an installed copy): nothing is committed here")


def test_what_the_commands_write_is_ignored(work_tree):
    paths = [f"{folder}/README.md" for folder in WRITTEN]
    ignored = git("check-ignore", "--no-index", *paths).stdout.split()
    assert sorted(ignored) == sorted(paths)


def test_no_committed_file_is_ignored(work_tree):
    done = git("ls-files", "--cached", "--ignored", "--exclude-standard")
    assert done.returncode == 0 and done.stdout == "", done.stdout
