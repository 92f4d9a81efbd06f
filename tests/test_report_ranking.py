"""A task's ranking with intervals (issue 37, item 6): each run's rank on the main metric with the marginal
confidence set of its rank (Mogstad, Romano, Shaikh & Wilhelm 2024) from the report's shared bootstrap resamples;
runs on other documents, resampled otherwise or not like with like are not ranked with the others, and say why."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from qahub.report import write_report
from qahub.report.ranks import point_ranks, rank_sets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_report  # noqa: E402 - the benchmark's synthetic lm-eval runs


def _normal_draws(values, sd, resamples=4000, seed=0):
    """Independent normal 'resamples' of scores ``values`` with standard deviation ``sd`` each."""
    rng = np.random.default_rng(seed)
    return np.asarray(values) + sd * rng.standard_normal((resamples, len(values)))


def test_two_runs_are_told_apart_only_beyond_the_two_sided_quantile_of_their_difference():
    # J = 2: the max over one difference is |t|; the difference's sd is sqrt(2) sd; z ~ 1.96
    sd = 1.0 / np.sqrt(2)
    low, high = rank_sets([3.0, 0.0], _normal_draws([3.0, 0.0], sd), 0.95)  # 3 sd of the difference apart
    assert low.tolist() == [1, 2] and high.tolist() == [1, 2]
    low, high = rank_sets([1.5, 0.0], _normal_draws([1.5, 0.0], sd), 0.95)  # 1.5 sd: not told apart
    assert low.tolist() == [1, 1] and high.tolist() == [2, 2]


def test_rank_sets_hold_the_point_rank_and_widen_with_the_noise():
    values = np.array([0.50, 0.49, 0.30, 0.10, 0.10])
    for sd in (0.001, 0.02, 0.5):
        low, high = rank_sets(values, _normal_draws(values, sd), 0.95)
        rank = point_ranks(values)
        assert rank.tolist() == [1, 2, 3, 4, 4]  # ties share the better rank
        assert (low <= rank).all() and (rank <= high).all()
    low, high = rank_sets(values, _normal_draws(values, 0.001), 0.95)
    assert low.tolist() == [1, 2, 3, 4, 4] and high.tolist() == [1, 2, 3, 5, 5]  # the tie stays a tie
    low, high = rank_sets(values, _normal_draws(values, 0.5), 0.95)
    assert low.tolist() == [1] * 5 and high.tolist() == [5] * 5


def test_a_difference_that_does_not_vary_in_the_resamples_is_known():
    draws = np.column_stack([np.linspace(0, 1, 50), np.linspace(0, 1, 50) - 0.1, np.linspace(0, 1, 50) - 0.1])
    low, high = rank_sets(draws.mean(0), draws, 0.95)  # the first is 0.1 above the others in every resample
    assert low.tolist() == [1, 2, 2] and high.tolist() == [1, 3, 3]


def _prompts_changed(folder, task):
    path = next(Path(folder).glob(f"samples_{task}_*.jsonl"))
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:  # the prompt the report hashes: the one sent
        line["arguments"]["gen_args_0"]["arg_0"] = "Another template: " + line["arguments"]["gen_args_0"]["arg_0"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    """Five synthetic lm-eval runs of every task (200 documents: 10 Topical-Chat conversations, the fewest units
    ranked; one of 180, one with other prompts on doc2dial)."""
    root = tmp_path_factory.mktemp("ranked")
    for i, (name, docs) in enumerate((("base", 200), ("low", 200), ("mid", 200), ("high", 200), ("limited", 180))):
        bench_report.write_run(root / name, name, i, docs, skill=0.1 + 0.2 * i)
    _prompts_changed(root / "mid", "qahub_doc2dial_grounding")
    arguments = [f"{name}={root / name}" for name in ("base", "low", "mid", "high", "limited")]
    return write_report(arguments, root / "out", resamples=200, progress=False, jobs=1)


def test_every_task_ranks_the_runs_on_the_same_documents_and_says_why_not_the_others(ranked):
    for task, entry in ranked["tasks"].items():
        r = entry["ranking"]
        main = entry["main_metric"]
        assert r["metric"] == main and r["reference"] == "base" and "Mogstad" in r["method"]
        assert r["not_ranked"]["limited"].startswith("other documents than base")
        if task == "qahub_doc2dial_grounding":
            assert r["not_ranked"]["mid"].startswith("not like with like with base: different prompts")
        ranks = [x["rank"] for x in r["runs"].values()]
        assert ranks == sorted(ranks)  # best first
        assert set(r["runs"]) | set(r["not_ranked"]) == set(entry["scores"])
        for name, x in r["runs"].items():
            assert x["value"] == entry["scores"][name][main]["value"]
            assert x["ci"][0] <= x["rank"] <= x["ci"][1] <= len(r["runs"])


def test_the_ranking_is_on_both_pages(ranked, tmp_path):
    from qahub.report.render import blocks, markdown

    text = markdown(blocks(ranked, {}))
    assert "### qahub_limur: ranking on exact_match" in text
    assert "| rank [set] | run | exact_match |" in text
    assert "Not ranked with base" in text and "limited (other documents than base" in text


def test_too_few_clusters_give_no_ranking_and_say_why(tmp_path):
    """60 documents: 3 Topical-Chat conversations, whose resamples cannot tell runs apart (the star rule's
    MIN_UNITS); the unclustered LIMUR's 60 documents are ranked."""
    for i, name in enumerate(("a", "b", "c")):
        bench_report.write_run(tmp_path / name, name, i, 60, skill=0.1 + 0.3 * i)
    data = write_report([f"{name}={tmp_path / name}" for name in "abc"], tmp_path / "out", resamples=200,
                        progress=False, jobs=1)
    few = data["tasks"]["qahub_topical_chat_freq"]["ranking"]
    assert few["runs"] == {} and few["note"] == "3 conversations: too few to rank (at least 10)"
    assert len(data["tasks"]["qahub_limur"]["ranking"]["runs"]) == 3
