"""A user-named output file that cannot be written on a full disk: the scores are still printed, the error is one
line naming the file, and no temporary file is left. Runs the installed ``qahub`` on a small tmpfs (root only)."""

import json
import os
import subprocess

import pytest
from test_fresh_references import QAHUB, one_line

from qahub import registry

JEMHOPQA = registry.samples_dir("jemhopqa")


@pytest.fixture
def full_disk(tmp_path):
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    stat = os.statvfs(folder)
    (folder / "filler").write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize))
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


@pytest.mark.parametrize("option", ["--output", "--per-question"])
def test_an_output_on_a_full_disk_still_prints_the_scores_and_names_the_file(full_disk, tmp_path, option):
    target = full_disk / "scores.out"
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([*QAHUB, "--quiet", "evaluate", "jemhopqa", "--predictions", JEMHOPQA / "predictions.json",
                           "--references", JEMHOPQA / "corpus_ver1.2" / "dev_ver1.2.json", option, target],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    assert json.loads(done.stdout)["a"]["em"] > 0  # the scores, printed before the write
    assert f"{option} {target}: No space left on device" in one_line(done.stderr)
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]


def test_write_output_names_the_file_in_an_error_without_an_errno(tmp_path, monkeypatch):
    from qahub import files

    def fail(*args, **kwargs):
        raise OSError("the link could not be made")

    monkeypatch.setattr(files.os, "link", fail)
    monkeypatch.setattr(files, "open", fail, raising=False)  # the fallback's exclusive create fails too
    with pytest.raises(OSError) as caught:
        files.write_output(tmp_path / "out.json", "x\n")
    assert str(caught.value) == f"--output {tmp_path / 'out.json'}: the link could not be made"
    assert list(tmp_path.iterdir()) == []
