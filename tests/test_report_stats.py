"""Issue 36: intervals and tests that know their independent units (clusters, or documents), epoch means, clusters
from what a run records, power that agrees with the test, and the task's best run. The runs are scripted in
memory (the report's own ``TaskRun``), as a harness's reader gives them to ``task_report``; ``_compared`` and
``_metric`` are test_report's."""

import ast
import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest
from test_report import _compared, _metric

from qahub.report.build import adjust, compare, estimator, task_report
from qahub.report.runs import Run, TaskRun, qahub_tasks, task_metrics
from qahub.report.stats import Mean, bootstrap

SETTINGS = {"seed": 12345, "resamples": 200, "confidence": 0.95, "baseline": "a"}
CHAT, JEOPARDY, LIMUR, JEMHOPQA = "qahub_topical_chat_freq", "qahub_jeopardy", "qahub_limur", "qahub_jemhopqa"


@pytest.fixture(scope="module")
def specs():
    return qahub_tasks()


def scripted(specs, task, name, items, clusters=None, cluster_name=None, categories=None):
    """A run of one task as a reader gives it: per-document ``items``, the values the harness reported (their
    aggregate), document n with doc_id n."""
    metrics = task_metrics(specs[task])
    n = len(next(iter(items.values())))
    values = {m: estimator(metrics[m], v, name).point() for m, v in items.items()}
    run = TaskRun(task, f"{name}/{task}.jsonl", values, [(i, f"hash{i}") for i in range(n)], items,
                  categories or {}, dataset=("qahub/data", None, "test"), ids=list(range(n)), clusters=clusters,
                  cluster_name=cluster_name)
    return Run(name, name, "model", f"{name}/results.json", tasks={task: run})


def reported(specs, task, runs, settings=SETTINGS):
    entry = task_report(task, specs[task], runs, settings["baseline"], settings)
    adjust({task: entry})  # at alpha 0.05, 1 - SETTINGS' confidence
    return entry


def chat_runs(specs, conversations, turns=20, cluster_name="conversation", keys=None):
    """Two Topical-Chat runs of ``conversations`` x ``turns`` documents, b's f1 clearly above a's on every turn."""
    rng = np.random.default_rng(conversations)
    n = conversations * turns
    keys = [f"conversation {i // turns}" for i in range(n)] if keys is None else keys
    a = rng.random(n) * 0.3
    b = a + 0.2 + rng.random(n) * 0.1
    replies = [[f"word{i} other{i % 5}", f"word{i} gold"] for i in range(n)]
    return [scripted(specs, CHAT, name, {"f1": list(f1), "bleu": replies, "distinct_1": [r for r, _ in replies]},
                     keys, cluster_name) for name, f1 in (("a", a), ("b", b))]


# --- 1. independent units


def test_one_conversation_gives_no_interval_test_mde_or_star(specs):
    """lm_eval --limit 20 on Topical-Chat: 20 turns of one conversation. Main: zero-width intervals, the cluster
    bootstrap's p 1/(resamples+1), MDE 0 and a star."""
    entry = reported(specs, CHAT, chat_runs(specs, 1))
    assert "resampled by conversation: 1 conversation of 20 documents" in " ".join(entry["notes"])
    for name in ("a", "b"):
        for metric, cell in entry["scores"][name].items():
            assert cell["ci"] == [None, None] and cell["no_interval"] == "1 conversation: no interval", metric
    for metric, cell in entry["comparisons"]["b"].items():
        assert cell["ci"] == [None, None] and cell["p"] is None and cell["mde"] is None, metric
        assert cell["test"] == "1 conversation: no interval, test or MDE" and cell["units"] == 1
        assert cell["star"] is False and cell["mde_note"]


def test_three_conversations_are_tested_by_the_exact_sign_flip_test_and_never_starred(specs):
    """60 turns of 3 conversations: main starred distinct-n and gave the f1 difference p = 0.001."""
    runs = chat_runs(specs, 3)
    entry = reported(specs, CHAT, runs)
    assert "resampled by conversation: 3 conversations of 60 documents" in " ".join(entry["notes"])
    cell = entry["comparisons"]["b"]["f1"]
    assert cell["test"] == "sign-flip permutation test over conversations (exact)" and cell["units"] == 3
    # every sign pattern of the three conversations' summed differences
    a, b = (np.array(run.tasks[CHAT].items["f1"]) for run in runs)
    sums = np.bincount(np.repeat(np.arange(3), 20), weights=b - a)
    totals = [abs(np.dot(signs, sums)) for signs in itertools.product([1, -1], repeat=3)]
    assert cell["p"] == pytest.approx(np.mean([t >= abs(sums.sum()) - 1e-12 for t in totals])) == 0.25
    assert cell["mde"] is None and cell["underpowered"].startswith("underpowered: no difference can be significant")
    assert not any(c["star"] for c in entry["comparisons"]["b"].values())
    # issue 42 item 13: a percentile bootstrap over 3 conversations gives no interval, and says why where the number is
    assert entry["scores"]["a"]["f1"]["ci"] == [None, None] and entry["scores"]["a"]["f1"]["no_interval"] == (
        "3 conversations: a percentile bootstrap over fewer than 4 gives no sensible interval (its resamples are a "
        "handful of the same few)")
    assert cell["ci"] == [None, None] and cell["no_interval"].startswith("3 conversations: a percentile bootstrap")
    for m in ("bleu", "distinct_1"):  # the scripted replies' BLEU (0) and distinct-1 are the same in every resample
        assert entry["scores"]["a"][m]["no_interval"].startswith("every resample gives"), m


def test_fewer_than_min_units_clusters_give_p_but_no_star_and_say_why(specs):
    entry = reported(specs, CHAT, chat_runs(specs, 8, turns=5))
    cell = entry["comparisons"]["b"]["f1"]
    assert cell["p"] == pytest.approx(2 / 2 ** 8) and cell["p_holm"] < 0.05
    assert cell["star"] is False and cell["no_star"] == "8 conversations: too few for a star (at least 10)"
    entry = reported(specs, CHAT, chat_runs(specs, 12, turns=5))
    cell = entry["comparisons"]["b"]["f1"]
    assert cell["star"] is True and cell["no_star"] is None and cell["units"] == 12


@pytest.mark.parametrize("count, star", [(8, False), (12, True)])
def test_mcnemar_needs_min_units_discordant_documents_for_a_star(specs, count, star):
    runs = [scripted(specs, LIMUR, name, {"exact_match": [value] * count + [1.0] * 30})
            for name, value in (("a", 0.0), ("b", 1.0))]
    cell = reported(specs, LIMUR, runs)["comparisons"]["b"]["exact_match"]
    assert cell["test"] == "McNemar exact" and cell["p"] == pytest.approx(binomtest(0, count, 0.5).pvalue)
    assert cell["p_holm"] < 0.05 and cell["star"] is star
    assert cell["no_star"] == (None if star else f"{count} discordant documents: too few for a star (at least 10)")


def test_a_paired_test_of_few_non_tied_documents_is_not_starred():
    cell = _compared(_metric("mean"), [0.0] * 22 + [0.1 * i for i in range(8)], [0.0] * 22 + [0.5 + i for i in range(8)])
    assert cell["test"] == "sign-flip permutation test (exact)" and cell["p"] == pytest.approx(2 / 2 ** 8)
    adjust({"t": {"comparisons": {"r": {"m": cell}}}})
    assert cell["no_star"] == "8 non-tied documents: too few for a star (at least 10)" and cell["star"] is False


def test_one_document_has_no_test():
    """Main gave one document a sign test (p 1) and a bootstrap interval of one point."""
    cell = _compared(_metric("mean"), [0.2], [0.7])
    assert cell["p"] is None and cell["ci"] == [None, None] and cell["test"] == "1 document: no interval, test or MDE"


def test_few_documents_get_the_exact_sign_flip_test_not_the_bootstrap():
    """Three documents: the bootstrap's p (about 0.07) is below anything an exact test of them can give."""
    cell = _compared(_metric("mean"), [0.2, 0.4, 0.1], [0.7, 0.4, 0.3])
    assert cell["test"] == "sign-flip permutation test (exact)" and cell["p"] == pytest.approx(0.5)


# --- 2. epochs


def test_epoch_means_are_not_counted_right_by_mcnemar_nor_given_wilson_intervals(specs):
    """inspect --epochs 2: exact_match 0.5 against 1.0 on all 120 questions. Main: McNemar p = 1 (0.5 counted
    right) and a Wilson interval."""
    runs = [scripted(specs, JEMHOPQA, name, {"exact_match": [value] * 120}) for name, value in (("a", 0.5), ("b", 1.0))]
    entry = reported(specs, JEMHOPQA, runs)
    cell = entry["comparisons"]["b"]["exact_match"]
    assert cell["test"].startswith("sign test") and cell["p"] == pytest.approx(binomtest(120, 120).pvalue)
    assert cell["star"] is True
    assert entry["intervals"]["exact_match"].startswith("percentile bootstrap over documents; Clopper-Pearson")
    # 0.5 on every document: no resample varies, and no bound holds the mean (main: [0.5, 0.5], a false certainty)
    a = entry["scores"]["a"]["exact_match"]
    assert a["ci"] == [None, None] and a["no_interval"].startswith("every value is 0.5 (no variance)")
    # +0.5 on every document: every resample's difference is 0.5 (main: [0.5, 0.5], a false certainty)
    assert cell["ci"] == [None, None] and cell["no_interval"].startswith("every resample gives the same difference")


def test_epoch_means_that_vary_get_the_paired_test_on_the_means(specs):
    rng = np.random.default_rng(3)
    runs = [scripted(specs, LIMUR, name, {"exact_match": list(rng.choice([0.0, 0.5, 1.0], 200))}) for name in "ab"]
    cell = reported(specs, LIMUR, runs)["comparisons"]["b"]["exact_match"]
    assert cell["test"] == "paired bootstrap"
    runs = [scripted(specs, LIMUR, name, {"exact_match": list(rng.choice([0.0, 0.5, 1.0], 20))}) for name in "ab"]
    cell = reported(specs, LIMUR, runs)["comparisons"]["b"]["exact_match"]
    assert cell["test"] == "sign-flip permutation test (exact)"


# --- 3. clusters from what is there


def test_a_run_that_records_no_conversation_is_resampled_by_document_and_says_so(specs):
    """An inspect log written before clusters were recorded. Main: "100 clusters of 100 documents"."""
    entry = reported(specs, CHAT, [scripted(specs, CHAT, name, {"f1": list(np.linspace(0, 1, 100) * k)}, None,
                                            "conversation") for name, k in (("a", 0.5), ("b", 0.6))])
    assert "resampled by document: the run records no conversation" in entry["notes"]
    assert not any("clusters of" in note or "conversations of" in note for note in entry["notes"])
    assert entry["cluster"]["runs"]["a"]["clusters"] is None
    assert entry["intervals"]["f1"] == "percentile bootstrap over documents"
    assert entry["comparisons"]["b"]["f1"]["units"] == 100


def test_jeopardy_rows_without_a_theme_are_resampled_by_document(specs):
    """Jeopardy's qa config: no row has a theme. Main: "resampled by theme: 40 clusters of 40 documents"."""
    runs = [scripted(specs, JEOPARDY, name, {"meteor": list(np.linspace(0, 1, 40) ** k)}, [None] * 40, "theme")
            for name, k in (("a", 1), ("b", 2))]
    entry = reported(specs, JEOPARDY, runs)
    assert entry["notes"][-1] == "resampled by document: no document has a theme"
    assert entry["comparisons"]["b"]["meteor"]["test"] == "paired bootstrap"


def test_a_pair_is_clustered_by_whichever_run_records_the_clusters(specs):
    runs = chat_runs(specs, 3)
    runs[0].tasks[CHAT] = dataclasses.replace(runs[0].tasks[CHAT], clusters=None)  # a TaskRun is frozen
    entry = reported(specs, CHAT, runs)
    assert entry["comparisons"]["b"]["f1"]["units"] == 3
    assert entry["notes"][-2:] == ["a: resampled by document: the run records no conversation",
                                   "b: resampled by conversation: 3 conversations of 60 documents, design effect of "
                                   f"f1 {entry['cluster']['runs']['b']['design_effect']['f1']:.2f} (approximate, and "
                                   "too few for a star: at least 10 conversations)"]


def clopper_pearson_upper(n, confidence=0.95):
    """The exact upper bound of a proportion with 0 successes in n: 1 - (alpha / 2) ** (1 / n)."""
    return 1 - ((1 - confidence) / 2) ** (1 / n)


def test_a_clustered_0_1_metric_all_0_gets_clopper_pearson_over_its_clusters_not_0_0(specs):
    """12 conversations of 5 turns, unparseable 0 on every turn. Main: the cluster bootstrap's [0, 0]."""
    runs = chat_runs(specs, 12, turns=5)
    for run in runs:
        run.tasks[CHAT].items["unparseable"], run.tasks[CHAT].values["unparseable"] = [0.0] * 60, 0.0
    entry = reported(specs, CHAT, runs)
    cell = entry["scores"]["a"]["unparseable"]
    assert cell["ci"][0] == 0 and cell["ci"][1] == pytest.approx(clopper_pearson_upper(12))  # n = the clusters
    assert cell["n"] == 60 and cell["n_effective"] == 12
    assert cell["method"] == ("Clopper-Pearson, every value 0 (no variance): n = 12 conversations, the "
                              "conservative bound (no design effect: no variance)")
    assert entry["intervals"]["unparseable"].startswith(
        "percentile bootstrap over conversations (approximate: fewer than 30 conversations); Clopper-Pearson where "
        "every value of a score is 0 or every one 1 (no variance")
    assert entry["intervals"]["f1"] == "percentile bootstrap over conversations (approximate: fewer than 30 " \
                                      "conversations)"  # f1 varies: its cells are the bootstrap's


def test_a_breakdown_cell_all_0_uses_the_run_s_design_effect(specs):
    """The f1 of one category is 0 on every turn, the run's f1 varies: n = the cell's documents / the run's
    design effect, between its clusters and its documents. Main: [0, 0]."""
    rng = np.random.default_rng(5)
    n, turns = 120, 4
    keys = [f"conversation {i // turns}" for i in range(n)]
    kind = ["zero" if (i // turns) % 2 else "some" for i in range(n)]
    f1 = [0.0 if kind[i] == "zero" else float(v) for i, v in enumerate(rng.random(n))]
    run = scripted(specs, CHAT, "a", {"f1": f1}, keys, "conversation", {"kind": kind})
    entry = reported(specs, CHAT, [run])
    effect = entry["cluster"]["runs"]["a"]["design_effect"]["f1"]
    cell = entry["breakdown"]["kind"]["zero"]["a"]["f1"]
    size = min(60, max(15, 60 / effect))
    assert cell["n_effective"] == pytest.approx(size) and cell["ci"][1] == pytest.approx(clopper_pearson_upper(size))
    assert cell["method"].startswith(f"Clopper-Pearson, every value 0 (no variance): n = 60 documents / design "
                                     f"effect {effect:.2f}")
    some = entry["breakdown"]["kind"]["some"]["a"]["f1"]
    assert "method" not in some and some["ci"][0] < some["value"] < some["ci"][1]


@pytest.mark.parametrize("value, bounded", [(0.0, True), (1.0, True), (0.4, False)])
def test_an_unclustered_mean_whose_values_are_all_equal_gets_no_false_certainty(specs, value, bounded):
    """JEMHopQA's char_f1 (in [0, 1]) equal on all 40 documents. Main: [value, value]. At a bound: Clopper-Pearson
    over the documents (exact for any values in [0, 1]); elsewhere no interval, and why."""
    cell = reported(specs, JEMHOPQA, [scripted(specs, JEMHOPQA, "a", {"char_f1": [value] * 40})])["scores"]["a"]["char_f1"]
    if bounded:
        width = clopper_pearson_upper(40)
        assert cell["ci"] == pytest.approx([0.0, width] if value == 0 else [1 - width, 1.0])
        assert cell["method"].endswith("(no variance): n = 40 documents")
    else:
        assert cell["ci"] == [None, None] and "method" not in cell
        assert cell["no_interval"] == "every value is 0.4 (no variance), a value no known range bounds: no interval"


def test_a_score_of_no_known_range_all_0_has_no_interval_and_meteor_s_range_is_known(specs):
    """Jeopardy's game_score is a sum (no range): 0 everywhere bounds nothing. Its METEOR declares [0, 1]
    (TaskSpec.ranges, issue 42 item 14): 0 everywhere gets Clopper-Pearson's exact interval of 0 of 30."""
    entry = reported(specs, JEOPARDY, [scripted(specs, JEOPARDY, "a", {"meteor": [0.0] * 30,
                                                                       "game_score": [0.0] * 30})])
    cell = entry["scores"]["a"]["game_score"]
    assert cell["ci"] == [None, None] and cell["no_interval"].startswith("every value is 0 (no variance)")
    meteor = entry["scores"]["a"]["meteor"]
    assert meteor["ci"] == [0.0, pytest.approx(clopper_pearson_upper(30))] and entry["ranges"]["meteor"] == [0, 1]


@pytest.mark.parametrize("clustered", [True, False])
def test_bleu_and_distinct_whose_resampled_differences_do_not_vary_get_the_sign_test_of_their_units(specs, clustered):
    """BLEU 0 (no word matches) against 100 (every reply the reference), one reply repeated by each run: every
    resample gives the same difference. Main: "too few documents" with 12 conversations of 5 turns."""
    n = 60
    keys = [f"conversation {i // 5}" for i in range(n)] if clustered else None
    refs = [f"word{i} is the gold reply here" for i in range(n)]
    runs = [scripted(specs, CHAT, name, {"bleu": [[reply(i), refs[i]] for i in range(n)], "distinct_1": [text] * n},
                     keys, "conversation")
            for name, reply, text in (("a", lambda i: "zzz", "yes"), ("b", lambda i: refs[i], "yes yes no"))]
    entry = reported(specs, CHAT, runs)
    units, word = (12, "conversation") if clustered else (n, "document")
    for metric in ("bleu", "distinct_1"):
        cell = entry["comparisons"]["b"][metric]
        assert cell["test"] == (f"sign test of each {word}'s own {metric} (exact: the resampled differences do not "
                                f"vary, {units} {word}s)"), cell["test"]
        assert cell["p"] == pytest.approx(binomtest(units, units, 0.5).pvalue) and cell["units"] == units
        assert cell["star"] is True  # 12 units all one way: p 0.0005, well below alpha after Holm


# --- 4. power that agrees with the test


def test_five_documents_all_wrong_against_all_right_are_underpowered_with_no_mde(specs):
    """Main: standard error 0, so MDE 0.0 and not underpowered, though p_holm is 0.125."""
    runs = [scripted(specs, LIMUR, name, {"exact_match": [value] * 5}) for name, value in (("a", 0.0), ("b", 1.0))]
    cell = reported(specs, LIMUR, runs)["comparisons"]["b"]["exact_match"]
    assert cell["p"] == 0.0625 and cell["mde"] is None
    assert cell["mde_note"] == "not estimable: the exact test's smallest p with 5 discordant documents is 0.0625"
    assert cell["underpowered"] == ("underpowered: no difference can be significant (the exact test's smallest p "
                                    "with 5 discordant documents is 0.0625)")


def test_a_zero_standard_error_gives_the_exact_test_s_smallest_detectable_difference(specs):
    runs = [scripted(specs, LIMUR, name, {"exact_match": [value] * 12}) for name, value in (("a", 0.0), ("b", 1.0))]
    cell = reported(specs, LIMUR, runs)["comparisons"]["b"]["exact_match"]
    assert cell["mde"] == pytest.approx(6 / 12) and "6 of 12 documents discordant one way" in cell["mde_note"]
    cell = _compared(_metric("mean"), [0.2] * 40, [0.7] * 40)  # a sign test of a value that is not 0/1
    assert cell["mde"] is None and cell["mde_note"].startswith("not estimable")


def test_a_difference_the_test_detected_is_never_underpowered():
    """Main: p_holm 0.022 shown "* (underpowered)": the MDE at 80 % power is above what a test at 5 % detects."""
    rng = np.random.default_rng(8)
    noise = rng.normal(size=100)
    differences = (noise - noise.mean()) / noise.std(ddof=1) + 0.25  # standard error 0.1: z 2.5
    base = rng.random(100)
    eb, er = (Mean.of(x, np.ones(100, dtype=bool)) for x in (base, base + differences))
    draws = bootstrap({("vs", "r", "m", "b"): (eb, None), ("vs", "r", "m", "r"): (er, None)}, 100, 1, 2000)
    cell = compare("r", {"m": _metric("mean")}, {"m": (eb, er, None)}, 100, draws, {"confidence": 0.95})["m"]
    assert cell["underpowered"] and cell["mde"] > 0.25  # before the test's verdict
    adjust({"t": {"comparisons": {"r": {"m": cell}}}})
    assert cell["p_holm"] < 0.05 and cell["star"] is True and cell["underpowered"] is None


# --- 5. the best run, and report.json's keys


HALF, ALL, NONE = [0.0] * 15 + [1.0] * 15, [1.0] * 30, [0.0] * 30


@pytest.mark.parametrize("values, higher, expected", [
    ({"a": NONE, "b": ALL}, True, "b"), ({"a": NONE, "b": ALL}, False, "a"),
    ({"a": ALL, "b": NONE, "c": HALF}, True, "a"),
    ({"a": HALF, "b": ALL, "c": NONE}, True, "b"),  # b against c: the leader's own test
    ({"a": NONE, "b": ALL, "c": ALL[:15] + [0.0] * 15}, True, "b"),
    ({"a": NONE, "b": ALL, "c": ALL[:29] + [0.0]}, True, None),  # b does not beat c significantly
    ({"a": NONE, "b": ALL, "c": ALL}, True, None)])  # a tie at the top: no best
def test_the_best_run_beats_every_other_run_with_a_star(specs, values, higher, expected):
    from qahub.report.build import best

    runs = [scripted(specs, LIMUR, name, {"exact_match": value}) for name, value in values.items()]
    entry = reported(specs, LIMUR, runs)
    assert all(c["star"] for per in entry["comparisons"].values() for c in per.values())
    assert best(entry, higher, "a") == expected
    if expected == "b" and len(values) == 3:  # the leader's test of c is a comparison cell of its own
        (cell,) = entry["leader"]["against"].values()
        assert entry["leader"]["run"] == "b" and cell["star"] and cell["delta"] < 0 and cell["test"] == "McNemar exact"


def test_no_best_run_without_a_star_on_every_comparison(specs):
    from qahub.report.build import best

    runs = [scripted(specs, LIMUR, name, {"exact_match": [value] * 5}) for name, value in (("a", 0.0), ("b", 1.0))]
    assert best(reported(specs, LIMUR, runs), True, "a") is None


def test_every_comparison_cell_has_the_contract_s_keys(specs):
    entry = reported(specs, CHAT, chat_runs(specs, 12, turns=3))
    for cell in entry["comparisons"]["b"].values():
        assert {"units", "star", "no_star", "mde", "mde_note", "delta", "ci", "p", "p_holm", "p_bh", "test", "n",
                "underpowered"} <= set(cell)
    assert entry["best"] is None and entry["caveats"] == {} and entry["not_compared"] == {}


def test_a_caveat_of_the_pair_withholds_the_star(specs, monkeypatch):
    import dataclasses
    import operator

    from qahub.report import alike

    pairing = alike.pairing

    def with_caveat(task, base, run, designs=None, same=operator.eq):
        return dataclasses.replace(pairing(task, base, run, designs, same),
                                   caveats=("different prompts (chat format)",))

    monkeypatch.setattr(alike, "pairing", with_caveat)
    runs = [scripted(specs, LIMUR, name, {"exact_match": [value] * 30}) for name, value in (("a", 0.0), ("b", 1.0))]
    cell = reported(specs, LIMUR, runs)["comparisons"]["b"]["exact_match"]
    assert cell["p_holm"] < 0.05 and cell["star"] is False
    assert cell["no_star"] == "not like with like: different prompts (chat format)"


# --- 6. no private name across modules


def test_the_report_s_statistics_import_no_private_name_of_another_module():
    source = Path(__file__).parents[1] / "src" / "qahub" / "report" / "stats.py"
    imported = [alias.name for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.startswith("qahub")
                for alias in node.names]
    assert not [name for name in imported if name.startswith("_")]
