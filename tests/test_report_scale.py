"""What makes a 100-run report fast changes no number (issue 37, item 6): the leader's tests reuse the task's own
resamples only where they are exactly the pair's, cluster renumbering is the same, and statsmodels' Holm (which
runs a full garbage collection) gives the same p with the objects frozen."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from qahub.report import build, write_report
from qahub.report.stats import Clusters

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_report  # noqa: E402 - the benchmark's synthetic lm-eval runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Four runs of every task, 80 documents, the best one not the baseline (so every task has a leader)."""
    root = tmp_path_factory.mktemp("scale")
    for i in range(4):
        bench_report.write_run(root / f"s{i}", f"s{i}", i, 80, skill=0.2 + 0.2 * i)
    return [f"s{i}={root / f's{i}'}" for i in range(4)], root


def test_the_leader_s_tests_are_the_same_from_the_task_s_own_resamples(runs, monkeypatch):
    arguments, root = runs
    found, own = [], build.reused
    monkeypatch.setattr(build, "reused", lambda *args: found.append(own(*args)) or found[-1])
    reused = write_report(arguments, root / "reused", resamples=200, progress=False, jobs=1)
    assert any(draws is not None for draws in found) and any(draws is None for draws in found)  # f1: not whole
    monkeypatch.setattr(build, "reused", lambda *args: None)  # every pair resampled by itself, as before
    alone = write_report(arguments, root / "alone", resamples=200, progress=False, jobs=1)
    assert all(entry["leader"] for entry in reused["tasks"].values())
    assert json.dumps(reused["tasks"]) == json.dumps(alone["tasks"])  # every number, to the last digit
    assert (root / "reused" / "report.json").read_bytes() == (root / "alone" / "report.json").read_bytes()


def test_clusters_taken_are_numbered_as_of_numbers_them():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        clusters = Clusters.of(rng.integers(0, n // 3 + 1, size=n).tolist())
        if clusters is None:
            continue
        index = rng.choice(n, size=int(rng.integers(0, n + 1)), replace=bool(rng.integers(0, 2)))
        mine, theirs = clusters.take(index), Clusters.of(clusters.ids[index].tolist())
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert mine.key == theirs.key and mine.ids.dtype == theirs.ids.dtype


def test_holm_with_the_objects_frozen_is_statsmodels_holm():
    import gc

    from statsmodels.stats.multitest import multipletests

    p = np.random.default_rng(1).random(50)
    assert build.adjusted(p, "holm").tolist() == multipletests(p, method="holm")[1].tolist()
    assert gc.get_freeze_count() == 0  # given back
