"""The JEMHopQA metric: official numbers on the real dev set, hand-worked cases, bad input, the command line."""

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import evaluate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qahub
from qahub import registry
from qahub.evaluate_cli import jemhopqa as cli
from qahub.testing import shared_data

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jemhopqa_predictions import SYNONYMS, make_predictions  # noqa: E402

OFFICIAL = json.loads((Path(__file__).parent / "data" / "jemhopqa_official_scores.json").read_text(encoding="utf-8"))
SAMPLE = registry.samples_dir("jemhopqa")
SAMPLE_DEV = SAMPLE / "corpus_ver1.2" / "dev_ver1.2.json"
CORE = {"dictionary": "core", "synonyms": "none"}
Q1 = "s1000000000000000000000000000001"
Q2 = "s1000000000000000000000000000002"
Q3 = "s1000000000000000000000000000003"


pytestmark = pytest.mark.filterwarnings("ignore:JEMHopQA scores use the Sudachi")


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(registry.metric_dir("jemhopqa")))


def real_rows(relpath):
    folder = shared_data("jemhopqa")
    if folder is None:
        pytest.skip("../shared/data/jemhopqa absent: the comparison with the official numbers needs the real dev set")
    return json.loads((folder / relpath).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def real_dev():
    return real_rows(OFFICIAL["dev"])


def records(official: dict) -> list:
    """Official prediction format -> prediction records (a part absent for a qid stays absent)."""
    out = {}
    for part in ("answer", "derivations"):
        for qid, value in official[part].items():
            out.setdefault(qid, {"qid": qid})[part] = value
    return list(out.values())


def sample_rows():
    return json.loads(SAMPLE_DEV.read_text(encoding="utf-8"))


def row(qid="q1", answer="794年", derivations=(("平安京", "遷都された年", ("794年",)),)):
    return {"qid": qid, "answer": answer, "derivations": [[s, r, list(o)] for s, r, o in derivations]}


def assert_scores_close(ours: dict, official: dict, tol=1e-9):
    for dim, scores in official.items():
        for name, value in scores.items():
            assert abs(ours[dim][name] - value) <= tol, f"{dim}.{name}: ours {ours[dim][name]!r}, official {value!r}"


# --- the official numbers on the real dev set ---------------------------------------------------------------


def test_dictionary_version_is_the_one_the_official_numbers_were_made_with():
    assert importlib.metadata.version("sudachidict-core") == OFFICIAL["sudachidict_core"], (
        "tests/data/jemhopqa_official_scores.json was made with another sudachidict-core: rerun the official script"
    )


@pytest.mark.quick
@pytest.mark.parametrize("case", sorted(OFFICIAL["cases"]))
def test_matches_official_scores(metric, case):
    expected = OFFICIAL["cases"][case]
    real_dev = real_rows(expected.get("dev", OFFICIAL["dev"]))
    options = dict(expected["options"])
    synonyms = SYNONYMS if options.pop("synonyms", None) == "SYNONYMS" else "none"
    preds = records(make_predictions(real_dev, expected["predictions"]))
    result = metric.compute(predictions=preds, references=real_dev, dictionary="core", synonyms=synonyms,
                            per_question=True, **options)
    assert_scores_close(result, expected["scores"])
    assert len(result["per_question"]) == len(real_dev)
    if case == "partial":
        return  # the official script crashes when asked for per-question scores of partial input
    for ours, official in zip(result["per_question"], expected["per_question"], strict=True):
        for column, value in zip(OFFICIAL["columns"], official, strict=True):
            assert abs(ours[column] - value) <= 1e-9, f"{case} {ours['qid']} {column}: {ours[column]} != {value}"


def test_synonym_case_differs_without_synonyms():
    cases = OFFICIAL["cases"]
    assert cases["synonyms"]["scores"]["r"]["f1"] > cases["synonyms_off"]["scores"]["r"]["f1"]


@pytest.mark.parametrize("kind", ["noisy", "derivation_perturbed"])
def test_ilp_without_cache_gives_the_same_scores_as_assignment(metric, real_dev, kind):
    preds = records(make_predictions(real_dev, kind))
    fast = metric.compute(predictions=preds, references=real_dev, per_question=True, **CORE)
    slow = metric.compute(predictions=preds, references=real_dev, per_question=True, solver="ilp", cache=False, **CORE)
    for a, b in zip(fast["per_question"], slow["per_question"], strict=True):
        for column in OFFICIAL["columns"]:
            assert abs(a[column] - b[column]) <= 1e-12, (a["qid"], column)
    assert_scores_close(fast, {d: slow[d] for d in ("a", "e", "r", "er")}, tol=1e-12)


# --- hand-worked values on the bundled sample -------------------------------------------------------------


def test_sample_scores_by_hand(metric):
    preds = records(json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8")))
    result = metric.compute(predictions=preds, references=sample_rows(), per_question=True, **CORE)
    by_qid = {r["qid"]: r for r in result["per_question"]}
    # q1: second triple's object "2003年9月" vs "2003年9月9日" = tokens ab vs abc: ratio 4/5; e = (1 + 0.8) / 2
    assert by_qid[Q1]["e_p"] == pytest.approx((1 + 0.9) / 2)
    # q2: answer 1921年 vs 1922年 (one merged number+counter token each): ratio 0; object 0 -> e = (1 + 0.5) / 2
    assert (by_qid[Q2]["a_em"], by_qid[Q2]["a_score"]) == (0.0, 0.0)
    assert by_qid[Q2]["e_r"] == pytest.approx(0.75)
    # q3: いいえ normalizes to NO; one of two gold triples predicted exactly: p 1, r 1/2, f 2/3
    assert (by_qid[Q3]["a_em"], by_qid[Q3]["a_score"]) == (1.0, 1.0)
    assert (by_qid[Q3]["e_p"], by_qid[Q3]["e_r"]) == (1.0, 0.5) and by_qid[Q3]["e_f"] == pytest.approx(2 / 3)
    assert result["a"] == {"em": pytest.approx(2 / 3), "score": pytest.approx(2 / 3)}
    assert result["e"]["prec"] == pytest.approx((0.95 + 0.75 + 1.0) / 3)
    assert (result["dictionary"], result["synonyms"], result["official_configuration"]) == ("core", "none", False)


def test_default_dictionary_is_the_best_installed(metric):
    best = next(d for d in ("full", "core", "small") if importlib.util.find_spec(f"sudachidict_{d}") is not None)
    result = metric.compute(predictions=[row()], references=[row()], synonyms="none")
    assert result["dictionary"] == best


def test_builder_rows_score_like_upstream_rows(metric, tmp_path):
    preds = records(json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8")))
    built = qahub.load("jemhopqa", "v1.2", data_dir=SAMPLE, cache_dir=str(tmp_path))["validation"]
    from_builder = metric.compute(predictions=preds, references=built, **CORE)
    from_upstream = metric.compute(predictions=preds, references=sample_rows(), **CORE)
    assert from_builder == from_upstream


def test_add_batch_then_compute_equals_compute(metric):
    rows = sample_rows()
    preds = records(json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8")))
    whole = metric.compute(predictions=preds, references=rows, **CORE)
    metric.add_batch(predictions=preds[:2], references=rows[:1])
    metric.add(prediction=preds[2], reference=rows[1])
    metric.add_batch(predictions=[], references=rows[2:])
    assert metric.compute(**CORE) == whole


# --- edge cases of the official script ---------------------------------------------------------------------


@pytest.mark.parametrize("answer, em, score", [
    ("", 0.0, 0.0),            # empty: 0
    (None, 0.0, 0.0),          # non-string: 0
    (1922, 0.0, 0.0),
    ("はい", 1.0, 1.0),         # はい -> YES
    ("Yes", 0.0, 0.0),         # a literal Yes is not YES, and its similarity is forced to 0
    ("「YES」 （確認済み）", 1.0, 1.0),  # quotes and bracketed text removed
])
def test_answer_edge_cases(metric, answer, em, score):
    result = metric.compute(predictions=[{**row(answer="YES"), "answer": answer}], references=[row(answer="YES")], **CORE)
    assert result["a"] == {"em": em, "score": score}


def test_empty_derivations_score_zero(metric):
    result = metric.compute(predictions=[row(derivations=())], references=[row()], **CORE)
    assert result["er"] == {"prec": 0.0, "recall": 0.0, "f1": 0.0}
    result = metric.compute(predictions=[row()], references=[row(derivations=())], **CORE)
    assert result["er"] == {"prec": 0.0, "recall": 0.0, "f1": 0.0}


def test_objects_are_flattened_and_aligned_one_to_one(metric):
    gold = row(derivations=[("A社", "拠点", ("東京", "大阪"))])
    pred = row(derivations=[("A社", "拠点", ("東京",)), ("A社", "拠点", ("東京",))])
    result = metric.compute(predictions=[pred], references=[gold], **CORE)
    # two predicted triples, one takes 東京 (1.0); the other aligns with 大阪: subject and relation 1, object 0
    assert result["r"] == {"prec": 1.0, "recall": 1.0, "f1": 1.0}
    assert result["e"]["prec"] == pytest.approx((1.0 + 0.5) / 2)


def test_more_than_26_distinct_tokens(metric):
    words = [f"{i}個" for i in range(1, 31)]  # number + counter: one token each
    gold = "、".join(words)
    pred = "、".join(words[:-1])
    scorer = sys.modules[type(metric).__module__]
    tokens = scorer.get_tokenizer("core", "none").tokens(gold)
    assert len(tokens) == 30  # the official script runs out of letters here (IndexError)
    result = metric.compute(predictions=[row(answer=pred)], references=[row(answer=gold)], **CORE)
    assert result["a"]["score"] == pytest.approx(2 * 29 / (30 + 29))


def test_ignore_missing(metric):
    rows = sample_rows()
    preds = [{"qid": Q1, "answer": "星の歌"}, {"qid": Q2, "answer": "1922年", "derivations": rows[1]["derivations"]}]
    with pytest.raises(ValueError, match=rf"1 question\(s\) have no predicted answer: '{Q3}'"):
        metric.compute(predictions=preds, references=rows, **CORE)
    result = metric.compute(predictions=preds, references=rows, ignore_missing=True, per_question=True, **CORE)
    assert result["a"] == {"em": 1.0, "score": 1.0}  # Q1, Q2 scored
    assert result["er"] == {"prec": 1.0, "recall": 1.0, "f1": 1.0}  # only Q2 has derivations
    assert [r["er_f"] for r in result["per_question"]] == [None, 1.0, None]
    answers_only = metric.compute(predictions=preds[:1], references=rows, ignore_missing=True, **CORE)
    assert answers_only["a"] == {"em": 1.0, "score": 1.0} and "er" not in answers_only  # no NaN for unscored parts


# --- nothing scored is an error (issue 15.1) ------------------------------------------------------------------


@pytest.mark.parametrize("preds, refs, ignore_missing, message", [
    ([], [], False, "nothing to score: there are no references"),
    ([], [row()], True, r"nothing to score: none of the 1 questions has a predicted answer"),
    ([{"qid": "q1", "answer": None}], [row()], True, "nothing to score: none of the 1 questions"),
    ([{"qid": "q1"}], [row()], True, "nothing to score"),
])
def test_nothing_to_score_is_an_error(metric, preds, refs, ignore_missing, message):
    with pytest.raises(ValueError, match=message):
        metric.compute(predictions=preds, references=refs, ignore_missing=ignore_missing, **CORE)
    metric.add_batch(predictions=preds, references=refs)
    with pytest.raises(ValueError, match=message):
        metric.compute(ignore_missing=ignore_missing, **CORE)


def test_null_answers_with_derivations_still_score_as_official(metric):
    result = metric.compute(predictions=[{"qid": "q1", "answer": None, "derivations": row()["derivations"]}],
                            references=[row()], ignore_missing=True, **CORE)
    assert result["a"] == {"em": 0.0, "score": 0.0} and result["er"]["f1"] == 1.0


# --- bad input -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pred, message", [
    ({"qid": "zz", "answer": "x", "derivations": []}, r"1 predicted qid\(s\) are not in the references: 'zz'"),
    ({"qid": "q1", "answer": "x", "derivations": "A, B, C"}, r"prediction for qid 'q1': derivations must be a list"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", "B"]]}, r"qid 'q1': derivation step \['A', 'B'\] must be"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", 3, ["C"]]]}, r"qid 'q1': derivation step .* string subject"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", "B", "C"]]}, r"qid 'q1': objects of derivation step .* list of str"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", "B", ["C", None]]]}, r"qid 'q1': objects of derivation step"),
    ({"qid": 7, "answer": "x"}, r"prediction 0: 'qid' must be a string, got 7"),
])
def test_bad_predictions(metric, pred, message):
    with pytest.raises(ValueError, match=message):
        metric.compute(predictions=[pred], references=[row()], **CORE)


def test_repeated_qid_and_bad_reference(metric):
    with pytest.raises(ValueError, match=r"1 qid\(s\) predicted more than once: 'q1'"):
        metric.compute(predictions=[row(), row()], references=[row()], **CORE)
    with pytest.raises(ValueError, match=r"reference for qid 'q1': 'answer' must be a string, got None"):
        metric.compute(predictions=[row()], references=[{**row(), "answer": None}], **CORE)
    with pytest.raises(ValueError, match=r"reference for qid 'q1': missing derivations"):
        metric.compute(predictions=[row()], references=[{"qid": "q1", "answer": "x"}], **CORE)


def test_bad_options(metric):
    with pytest.raises(ValueError, match="solver must be 'assignment' or 'ilp'"):
        metric.compute(predictions=[row()], references=[row()], solver="greedy", **CORE)
    missing = [d for d in ("full", "small") if importlib.util.find_spec(f"sudachidict_{d}") is None]
    for name in missing:
        with pytest.raises(RuntimeError, match=f"the Sudachi {name} dictionary is not installed"):
            metric.compute(predictions=[row()], references=[row()], dictionary=name, synonyms="none")
    with pytest.raises(ValueError, match=r"user_dic user.dic is read by chikkarpy only, but the synonyms are 'none'"):
        metric.compute(predictions=[row()], references=[row()], dictionary="core", synonyms="none", user_dic="user.dic")
    with pytest.raises(ValueError, match="dictionary must be one of"):
        metric.compute(predictions=[row()], references=[row()], dictionary="huge", synonyms="none")
    if importlib.util.find_spec("chikkarpy") is None:
        with pytest.raises(RuntimeError, match="synonyms='chikkarpy' needs chikkarpy"):
            metric.compute(predictions=[row()], references=[row()], dictionary="core", synonyms="chikkarpy")


# --- synonyms ------------------------------------------------------------------------------------------------

SYNONYM_FILE = Path(__file__).parent / "fixtures" / "jemhopqa_metric" / "synonyms.csv"


def helper(metric, name):
    """A helper module of the loaded metric (evaluate copies them beside the main module)."""
    return sys.modules[type(metric).__module__.rsplit(".", 1)[0] + "." + name]


def test_synonym_file_follows_chikkarpy_lookup_rules(metric):
    table = helper(metric, "tokens").SynonymTable.from_file(SYNONYM_FILE)
    assert table.lookup("誕生日") == ["生年月日", "生まれ"]  # 出生日 has ambiguity 2: switched off
    assert table.lookup("生まれ") == []  # an ambiguous entry does not expand
    assert table.lookup("出生日") is None  # unknown: the next source is asked
    assert table.lookup("住所") == ["所在地", "アドレス"]  # two groups
    assert table.lookup("所在地") == ["住所"]


def test_bad_synonym_file(metric, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("100001,1,0,,0,0,0,(),誕生日,,\n100002,1,0,,0,0,0,(),生年月日,,\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.csv: line 2: group id 100002 changes inside the group of 100001"):
        metric.compute(predictions=[row()], references=[row()], dictionary="core", synonyms=str(bad))
    with pytest.raises(ValueError, match=r"synonyms 'chikarpy': neither 'auto', 'chikkarpy', 'none' nor a synonym"):
        metric.compute(predictions=[row()], references=[row()], dictionary="core", synonyms="chikarpy")
    bad.write_text("誕生日,生年月日\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.csv: line 1: not a synonym source line"):
        metric.compute(predictions=[row()], references=[row()], dictionary="core", synonyms=str(bad))


def birthday(relation):
    return row(derivations=[("夏目漱石", relation, ("1867年2月9日",))])


@pytest.mark.parametrize("source, description", [
    (str(SYNONYM_FILE), "file synonyms.csv (6 words)"),
    ({"誕生日": ["生年月日"]}, "mapping (1 words)"),
    ([{"住所": []}, str(SYNONYM_FILE)], "mapping (1 words) + file synonyms.csv (6 words)"),
])
def test_synonyms_make_relations_match(metric, source, description):
    without = metric.compute(predictions=[birthday("誕生日")], references=[birthday("生年月日")], **CORE)
    assert without["r"]["f1"] == 0.0
    with pytest.warns(UserWarning, match=f"Sudachi core dictionary and synonyms: {re.escape(description)};"):
        result = metric.compute(predictions=[birthday("誕生日")], references=[birthday("生年月日")],
                                dictionary="core", synonyms=source)
    assert result["r"] == {"prec": 1.0, "recall": 1.0, "f1": 1.0}
    assert (result["synonyms"], result["official_configuration"]) == (description, False)


def test_synonym_callable_and_precedence(metric):
    def lookup(word):
        return ["生年月日"] if word == "誕生日" else None

    result = metric.compute(predictions=[birthday("誕生日")], references=[birthday("生年月日")],
                            dictionary="core", synonyms=lookup)
    assert result["r"]["f1"] == 1.0 and result["synonyms"] == "callable lookup"
    # the first source that knows a word answers: here the mapping says 誕生日 has no synonyms
    first = metric.compute(predictions=[birthday("誕生日")], references=[birthday("生年月日")],
                           dictionary="core", synonyms=[{"誕生日": []}, lookup])
    assert first["r"]["f1"] == 0.0
    with pytest.raises(ValueError, match="synonym callable returned 7 for"):
        metric.compute(predictions=[birthday("誕生日")], references=[birthday("生年月日")],
                       dictionary="core", synonyms=lambda word: 7)


# --- loading without qahub -----------------------------------------------------------------------------------

# run in a process where qahub cannot be imported, with the other checks of this metric (tests/metric_alone.py)
_WITHOUT_QAHUB_CODE = textwrap.dedent(
    """
    import json, sys
    import evaluate

    metric = evaluate.load(name)
    row = {"qid": "q1", "answer": "794年", "derivations": [["平安京", "遷都された年", ["794年"]]]}
    result = metric.compute(predictions=[row], references=[row], dictionary="core", synonyms="none")
    replies = metric.compute(predictions=['回答: 794年\\n導出: [["平安京", "遷都された年", ["794年"]]]', None],
                             references=[row, row], dictionary="core", synonyms="none")
    assert (replies["a"]["em"], replies["unparseable"], replies["llm_jp_eval"]["exact_match"]) == (0.5, 1, 0.0)
    task_api = sys.modules[type(metric).__module__.rsplit(".", 1)[0] + ".task_api"]
    assert task_api.score_derivations(task_api.derivations_target(row), row)["er_f1"] == 1.0
    print(json.dumps(result))
    """
)
WITHOUT_QAHUB = {"jemhopqa_scores": _WITHOUT_QAHUB_CODE}


def test_loads_without_qahub(metric_alone):
    """A copy of the directory, in a process where qahub cannot be imported (tests/metric_alone.py): the scores,
    reply parsing and derivation targets all work and nothing imported qahub."""
    results = metric_alone("jemhopqa")
    check = results["jemhopqa_scores"]
    assert check["ok"], check["error"][-3000:]
    assert not check["qahub_imports"] and not results["qahub_in_sys_modules"]
    result = json.loads(check["stdout"].strip().splitlines()[-1])
    assert result["er"] == {"prec": 1.0, "recall": 1.0, "f1": 1.0} and result["dictionary"] == "core"


# --- command line --------------------------------------------------------------------------------------------


def cli_args(**kwargs):
    base = {"predictions": str(SAMPLE / "predictions.json"), "references": str(SAMPLE_DEV), "config": None,
            "split": None, "data_dir": None, "ignore_missing": False, "per_question": None,
            "dictionary": "core", "synonyms": "none", "user_dic": None, "mirror_url": None, "solver": "assignment",
            "by_position": False, "overwrite": False}
    return argparse.Namespace(**{**base, **kwargs})


def run_and_write(args):
    """``qahub evaluate jemhopqa``: the scores, then the --per-question file (written once they are printed)."""
    result = cli.run(args)
    cli.write_outputs(args)
    return result


def scores_of(args):
    """``qahub evaluate jemhopqa``'s scores, its signature (which names the references read) left out."""
    result = cli.run(args)
    result.pop("qahub_signature")
    return result


def test_cli_signature_names_the_scorer_settings_used():
    """Issue 37: the settings the scores were made with, in the printed signature."""
    signature = cli.run(cli_args())["qahub_signature"]
    assert signature["scorer"] == ("dictionary=core,mode=C,scorer=jemhopqa-official,solver=assignment,"
                                   "synonyms=none,tokenizer=sudachi")
    assert (signature["metric"], signature["harness"], signature["documents"]) == ("jemhopqa", "qahub evaluate", 3)


def test_cli_formats_and_references_agree(metric, tmp_path):
    expected = metric.compute(predictions=records(json.loads((SAMPLE / "predictions.json").read_text("utf-8"))),
                              references=sample_rows(), **CORE)
    assert scores_of(cli_args()) == expected
    assert scores_of(cli_args(predictions=str(SAMPLE / "predictions.tsv"))) == expected
    built = scores_of(cli_args(references=None, config="v1.2", data_dir=str(SAMPLE)))
    assert built == expected
    assert scores_of(cli_args(references=None, data_dir=str(SAMPLE))) == expected  # the default config: v1.2


def test_cli_references_come_from_rows_only(metric, sample_exports, tmp_path, monkeypatch):
    """Issue 14.2: an export (load_dataset), a build (--data-dir) or an upstream file's folder; never parsed here."""
    real_read = cli.predictions.read
    folder = sample_exports["jemhopqa"]
    expected = scores_of(cli_args(references=None, data_dir=str(SAMPLE), config="v1.2"))
    assert scores_of(cli_args(references=str(folder), config="v1.2")) == expected
    assert scores_of(cli_args(references=str(folder), config="v1.2", split="validation")) == expected
    train_file = SAMPLE / "corpus_ver1.2" / "train_ver1.2.json"
    first = json.loads(train_file.read_text(encoding="utf-8"))[0]
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"answer": {first["qid"]: first["answer"]}, "derivations": {}}), encoding="utf-8")
    train = scores_of(cli_args(predictions=str(pred), references=str(train_file), ignore_missing=True))
    assert train["a"] == {"em": 1.0, "score": 1.0}  # an upstream train file: the train split of its folder
    gold = tmp_path / "gold.json"
    gold.write_text(SAMPLE_DEV.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"--references .*gold.json: a file is read only where the upstream layout"):
        scores_of(cli_args(references=str(gold)))
    with pytest.raises(ValueError, match=r"is the v1.2 validation file, but --config v1.1"):
        scores_of(cli_args(config="v1.1"))
    with pytest.raises(ValueError, match="give the references"):
        scores_of(cli_args(references=None))
    # the prediction reader never sees the references (the prediction file here is a TSV)
    monkeypatch.setattr(cli.predictions, "read", lambda path, *a, **k: pytest.fail(f"read {path}") if path != str(
        SAMPLE / "predictions.tsv") else real_read(path, *a, **k))
    assert scores_of(cli_args(predictions=str(SAMPLE / "predictions.tsv"), references=None,
                            data_dir=str(SAMPLE), config="v1.2")) == expected


def test_cli_per_question_file(tmp_path):
    out = tmp_path / "scores.tsv"
    run_and_write(cli_args(per_question=str(out)))
    lines = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == ["qid", *OFFICIAL["columns"]]
    assert [line[0] for line in lines[1:]] == [Q1, Q2, Q3]
    assert lines[2][1:3] == ["0.0", "0.0"] and float(lines[1][3]) == pytest.approx(0.95)


def test_cli_ignore_missing_partial_file(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"answer": {Q1: "星の歌"}, "derivations": {}}, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pred.json against .*dev_ver1.2.json: 2 question\(s\) have no predicted"):
        cli.run(cli_args(predictions=str(pred)))
    out = tmp_path / "scores.tsv"
    result = run_and_write(cli_args(predictions=str(pred), ignore_missing=True, per_question=str(out)))
    assert result["a"] == {"em": 1.0, "score": 1.0} and "er" not in result  # nothing printed as a score
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert rows[0][1:4] == ["1.0", "1.0", ""] and rows[1][1:] == [""] * 11


@pytest.mark.parametrize("text, message", [
    # the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
    ('[{"qid": "x"}]', r"pred\.json: record 0: no reply \(a field 'reply' or 'answer' or 'derivations'"),
    ('[{"qid": "x", "answer": "a"}]', r"pred\.json: record 0: the id 'x' is not a row of .*dev_ver1\.2\.json"),
    ('["a", "b", "c", "d"]', r"pred\.json: a list of 4 replies without ids: .*or pass --by-position"),
    ('["a", ', "not valid JSON"),
    ('{"answer": {}}', r"not the official prediction format: .* got \['answer'\]"),
    ('{"answer": {}, "derivations": {', "not valid JSON"),
    ('{"answer": {"s1000000000000000000000000000001": "x"}, "derivations": '
     '{"s1000000000000000000000000000001": [["a", "b", "c"]]}}', r"qid 's1000000000000000000000000000001': objects"),
])
def test_cli_bad_prediction_files(tmp_path, text, message):
    pred = tmp_path / "pred.json"
    pred.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as err:
        cli.run(cli_args(predictions=str(pred)))
    assert "pred.json" in str(err.value)


def test_cli_tsv_unreadable_step_is_dropped(tmp_path, capsys):
    pred = tmp_path / "pred.tsv"
    pred.write_text(f"qid\tpredicted_answer\tpredicted_derivations\n{Q1}\t星の歌\t(星の歌, 発売日, 2001年4月1日); 月の歌は発売日\n",
                    encoding="utf-8")
    with pytest.warns(UserWarning, match="pred.tsv: record line 2: qid 's1000000000000000000000000000001': "
                                         "derivation step '月の歌は発売日'"):
        records_read = cli.read_predictions(pred)
    assert records_read == [{"qid": Q1, "answer": "星の歌", "derivations": [["星の歌", "発売日", ["2001年4月1日"]]]}]


def test_cli_command_reports_errors_without_traceback(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text('{"answer": {"zz": "x"}, "derivations": {"zz": []}}', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "qahub.cli", "--quiet", "evaluate", "jemhopqa", "--predictions",
                           str(pred), "--references", str(SAMPLE_DEV), "--dictionary", "core", "--synonyms", "none"],
                          capture_output=True, text=True, env={**os.environ, "HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 1
    assert "pred.json: record 0: the id 'zz' is not a row of " in done.stderr
    assert "Traceback" not in done.stderr


def test_chikkarpy_wiring_with_a_stand_in_module(metric, tmp_path, monkeypatch):
    """chikkarpy cannot be installed here: a stand-in with its API checks how the adapter drives it."""
    user_dic = tmp_path / "user.dic"
    user_dic.write_bytes(b"stand-in")

    class Dictionary:
        def __init__(self, filename=None):
            self.filename = filename

    class Chikkar:
        def __init__(self):
            self.dictionaries, self.verbs = [], False

        def add_dictionary(self, dictionary):
            self.dictionaries.insert(0, dictionary)  # the later one takes precedence, as chikkarpy

        def enable_verb(self):
            self.verbs = True

        def find(self, word):
            files = [d.filename for d in self.dictionaries]
            return ["生年月日"] if (word, self.verbs, files) == ("誕生日", True, [str(user_dic), None]) else []

    package = type(sys)("chikkarpy")
    package.Chikkar = Chikkar
    dictionarylib = type(sys)("chikkarpy.dictionarylib")
    dictionarylib.Dictionary = Dictionary
    monkeypatch.setitem(sys.modules, "chikkarpy", package)
    monkeypatch.setitem(sys.modules, "chikkarpy.dictionarylib", dictionarylib)
    tokens = helper(metric, "tokens")
    synonyms = tokens.make_synonyms("chikkarpy", user_dic=user_dic)
    assert (synonyms.description, synonyms.official) == ("chikkarpy system dictionary + user.dic", True)
    assert synonyms.find("誕生日") == ["生年月日"] and synonyms.find("所在地") == []
    assert tokens.make_synonyms("chikkarpy").official is False  # no user.dic: not the official configuration
    with pytest.raises(FileNotFoundError, match="missing.dic: no such file"):
        tokens.make_synonyms("chikkarpy", user_dic=tmp_path / "missing.dic")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 5).flatmap(lambda n: st.lists(
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1 / 3, 0.8, 1.0]), min_size=n, max_size=n), min_size=0, max_size=5)))
def test_assignment_optimum_equals_the_integer_program(metric, weights):
    import numpy as np

    scoring = helper(metric, "scoring")
    matrix = np.array(weights, dtype=float).reshape(len(weights), -1 if weights and weights[0] else 0)
    assert abs(scoring.matched_weight(matrix, "assignment") - scoring.matched_weight(matrix, "ilp")) <= 1e-9


SAME_FUNCTION = """
from qahub.metrics.jemhopqa import scoring
ours = scoring.linear_sum_assignment()
import scipy.optimize
print(ours is scipy.optimize.linear_sum_assignment)
"""


def test_assignment_is_scipys_own_function_read_without_its_package():
    """The assignment that spares `qahub evaluate jemhopqa` scipy.optimize's __init__ is scipy's compiled
    linear_sum_assignment itself, not a copy: read first in a fresh process, then scipy.optimize imported whole."""
    done = subprocess.run([sys.executable, "-c", SAME_FUNCTION], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["True"], done.stderr[-2000:]


def test_jemhopqa_user_dictionary_source_as_synonyms(metric):
    folder = shared_data("jemhopqa")
    if folder is None:
        pytest.skip("../shared/data/jemhopqa absent: sample_user_dic.txt (the source of user.dic) is read from there")
    source = str(folder / "sample_user_dic.txt")
    pred = row(derivations=[("あるゲーム", "開発元", ("ある会社",))])
    gold = row(derivations=[("あるゲーム", "開発者", ("ある会社",))])
    assert metric.compute(predictions=[pred], references=[gold], **CORE)["r"]["f1"] == 0.0
    result = metric.compute(predictions=[pred], references=[gold], dictionary="core", synonyms=source)
    assert result["r"]["f1"] == 1.0 and result["synonyms"] == "file sample_user_dic.txt (243 words)"


def test_user_dic_download_from_a_mirror(tmp_path, http_server):
    folder = shared_data("jemhopqa")
    if folder is None:
        pytest.skip("../shared/data/jemhopqa absent: the mirror serves its user.dic")
    mirror = tmp_path / "mirror"
    (mirror / "jemhopqa").mkdir(parents=True)
    shutil.copy(folder / "user.dic", mirror / "jemhopqa" / "user.dic")
    path = cli.fetch_user_dic(http_server(mirror), cache_dir=tmp_path / "cache")
    assert Path(path).read_bytes() == (folder / "user.dic").read_bytes()
    (mirror / "jemhopqa" / "user.dic").write_bytes(b"not the dictionary")
    with pytest.raises(ValueError, match=r"jemhopqa/user.dic: checksum mismatch"):
        cli.fetch_user_dic(http_server(mirror), cache_dir=tmp_path / "cache2")


def test_user_dic_download_needs_chikkarpy():
    if importlib.util.find_spec("chikkarpy") is not None:
        pytest.skip("chikkarpy is installed: this checks the message given without it")
    with pytest.raises(ValueError, match="--user-dic download: user.dic is read by chikkarpy, which is not installed"):
        cli.run(cli_args(user_dic="download"))


# --- review fixes ----------------------------------------------------------------------------------------------

LONG = "東京都に行く。" * 8000  # 168,000 bytes: Sudachi refuses more than 49,149 at once


def test_very_long_texts_are_tokenized_in_pieces(metric):
    tokens = helper(metric, "tokens")
    pieces = tokens.split_text(LONG, tokens.SUDACHI_MAX_BYTES)
    assert "".join(pieces) == LONG and len(pieces) == 4
    assert all(len(p.encode()) <= tokens.SUDACHI_MAX_BYTES and p.endswith("。") for p in pieces)
    assert tokens.split_text("abcdefgh", 4) == ["abcd", "efgh"]  # no boundary: cut between characters
    result = metric.compute(predictions=[row(answer=LONG)], references=[row(answer=LONG)], **CORE)
    assert result["a"] == {"em": 1.0, "score": 1.0}
    # 東京都 / 行く: 2 tokens per sentence; a prediction with half the sentences matches half the gold tokens
    half = metric.compute(predictions=[row(answer=LONG[: len(LONG) // 2])], references=[row(answer=LONG)], **CORE)
    assert half["a"]["score"] == pytest.approx(2 * 8000 / (16000 + 8000))
    # a text whose normalized form outgrows Sudachi's 65,535 bytes (㍻ -> 平成) is split further
    expanding = "㍻" * 16000
    assert metric.compute(predictions=[row(answer=expanding)], references=[row(answer=expanding)], **CORE)["a"]["score"] == 1.0


token_lists = st.lists(st.frozensets(st.sampled_from("abcdefghij"), min_size=1, max_size=3), max_size=40)


@settings(max_examples=50, deadline=None)
@given(token_lists, token_lists)
def test_greedy_pairing_of_long_token_lists_equals_the_official_scan(metric, gold, pred):
    scoring = helper(metric, "scoring")
    assert scoring._greedy_pairs_indexed(gold, pred) == scoring._greedy_pairs_scan(gold, pred)


def test_letters_beyond_unicode_fall_back_to_numbers(metric, monkeypatch):
    scoring = helper(metric, "scoring")
    gold, pred = [frozenset(["x"]), frozenset(["y"])], [frozenset(["y"])]
    assert scoring.letters(gold, pred) == ("ba", "a")
    monkeypatch.setattr(scoring.sys, "maxunicode", 98)  # as if the tokens had used up Unicode
    assert scoring.letters(gold, pred) == ([1, 0], [0])


def write_tsv(tmp_path, body: bytes, name="pred.tsv"):
    path = tmp_path / name
    path.write_bytes(body)
    return path


H = b"qid\tpredicted_answer\tpredicted_derivations\n"
ABC = [["a", "b", ["c"]]]


# expected records = the output of upstream tsv_to_pred_json.py (pandas.read_table) on the same bytes
@pytest.mark.parametrize("body, expected", [
    (H + "q1\tA\u2028B\t(a, b, c)\nq2\tX\t(a, b, c)\n".encode(), [("q1", "A\u2028B", ABC), ("q2", "X", ABC)]),
    (H + b"q1\tA\x0cB\t(a, b, c)\n", [("q1", "A\x0cB", ABC)]),
    (H + "q1\tA\x85B\t(a, b, c)\n".encode(), [("q1", "A\x85B", ABC)]),
    (H + b"q1\tA\x1cB\x1dC\x1eD\t(a, b, c)\n", [("q1", "A\x1cB\x1dC\x1eD", ABC)]),
    (H + b'q1\t"A\nB"\t(a, b, c)\n', [("q1", "A\nB", ABC)]),
    (H + b'q1\t"A\tB"\t(a, b, c)\nq2\t"x""y"\t(a, b, c)\n', [("q1", "A\tB", ABC), ("q2", 'x"y', ABC)]),
    (b"\xef\xbb\xbf" + H + b"q1\tA\t(a, b, c)\n", [("q1", "A", ABC)]),  # BOM dropped
    (b"predicted_derivations\tqid\tpredicted_answer\n(a, b, c)\tq1\tA\n", [("q1", "A", ABC)]),  # by name
    (b"qid\tpredicted_answer\tpredicted_derivations\textra\nq1\tA\t(a, b, c)\tz\n", [("q1", "A", ABC)]),
    (H.replace(b"\n", b"\r\n") + b"q1\tA\t(a, b, c)\r\n", [("q1", "A", ABC)]),
    (H + b"q1\tA\n", [("q1", "A", [])]),  # short row: missing cell
    (H + b"q1\tNA\t(a, b, c)\nq2\tNone\t(a,b,c)\nq3\tnan\t\nq4\tnull\t(a, b, c)\nq5\t<NA>\tN/A\n",
     [("q1", None, ABC), ("q2", None, ABC), ("q3", None, []), ("q4", None, ABC), ("q5", None, [])]),
    (H + b"q1\t1921\t(a, b, c)\nq2\t0794\t(a, b, c)\n", [("q1", None, ABC), ("q2", None, ABC)]),  # numbers
    (H + b"q1\t A \t(a, b, c)\n", [("q1", " A ", ABC)]),
    (H + "q1\tA\t（あ，い，う、え）; (x, y, z)\n".encode(), [("q1", "A", [["あ", "い", ["う", "え"]], ["x", "y", ["z"]]])]),
])
def test_tsv_is_read_as_upstream_pandas_does(tmp_path, body, expected):
    records_read = cli.read_predictions(write_tsv(tmp_path, body))
    assert records_read == [{"qid": q, "answer": a, "derivations": d} for q, a, d in expected]


def test_tsv_na_answers_score_zero_as_official(metric, tmp_path):
    path = write_tsv(tmp_path, H + f"{Q1}\tNA\t\n{Q2}\tnull\t\n{Q3}\tいいえ\t\n".encode())
    result = metric.compute(predictions=cli.read_predictions(path), references=sample_rows(), **CORE)
    assert result["a"]["em"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("body, message", [
    # the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric
    (H + b"\tA\t(a, b, c)\n", r"pred.tsv: record line 2: the id 'qid' must be text, got ''"),
    (H + b"q1\tA\t(a, b, c)\nq2\tB\t(a, b, c)\tx\n", r"pred.tsv: record line 3: 4 cells, but the header has 3 columns"),
    (b"qid\tanswer\n", r"pred.tsv: holds no predictions: nothing to score"),
    # upstream's dict kept the last row of a qid given twice; every metric's reader refuses a repeated id
    (H + b"q1\tA\t(a, b, c)\nq1\tB\t(a, b, c)\n", r"pred.tsv: record line 3: the id 'q1' is given twice"),
])
def test_bad_tsv_files(tmp_path, body, message):
    with pytest.raises(ValueError, match=message):
        cli.read_predictions(write_tsv(tmp_path, body))


def arrow_files(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file() and ".lock" not in p.name)


def test_failed_compute_leaves_no_cache_file(tmp_path):
    cache = tmp_path / "evaluate-cache"
    local = evaluate.load(str(registry.metric_dir("jemhopqa")), cache_dir=str(cache))
    local.compute(predictions=[row()], references=[row()], **CORE)
    assert arrow_files(cache) == []
    failing = [
        {"predictions": [row()], "references": [row(), row(qid="q2")]},  # missing question
        {"predictions": [row(qid="zz")], "references": [row()]},  # unknown qid
        {"predictions": [row()], "references": [row()], "dictionary": "huge"},  # bad option, found in _compute
        {"predictions": [row(answer="\ud800x")], "references": [row()]},
    ]
    for kwargs in failing:
        with pytest.raises(ValueError):
            local.compute(**{**CORE, **kwargs})
        assert arrow_files(cache) == [], kwargs
    local.add_batch(predictions=[row()], references=[row(), row(qid="q2")])
    with pytest.raises(ValueError, match="no predicted answer: 'q2'"):
        local.compute(**CORE)
    assert arrow_files(cache) == []
    assert local.compute(predictions=[row()], references=[row()], **CORE)["a"]["em"] == 1.0  # still usable


@pytest.mark.parametrize("pred, ref, message", [
    (row(answer="\ud800x"), row(), r"prediction for qid 'q1': answer '\\ud800x' holds a lone surrogate"),
    (row(derivations=[("A", "B\udfff", ("C",))]), row(), r"prediction for qid 'q1': derivation element 'B\\udfff'"),
    (row(), row(answer="\udc80"), r"reference for qid 'q1': answer '\\udc80' holds a lone surrogate"),
    ({**row(), "qid": "q\ud800"}, row(), r"prediction 0: qid 'q\\ud800' holds a lone surrogate"),
])
def test_lone_surrogates_are_named(metric, pred, ref, message):
    with pytest.raises(ValueError, match=message):
        metric.compute(predictions=[pred], references=[ref], **CORE)


def test_bad_synonym_line_is_quoted(metric, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("誕生日,生年月日\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.csv: line 1: not a synonym source line .*: '誕生日,生年月日'$"):
        metric.compute(predictions=[row()], references=[row()], dictionary="core", synonyms=str(bad))


def test_non_utf8_synonym_file_is_named(tmp_path):
    csv_file = tmp_path / "syn.csv"
    csv_file.write_bytes("100001,1,0,,0,0,0,(),誕生日,,\n".encode("shift_jis"))
    with pytest.raises(ValueError, match=r"^synonym source file .*syn.csv: not UTF-8 text") as err:
        cli.run(cli_args(synonyms=str(csv_file)))
    assert "dev_ver1.2.json" not in str(err.value)
    json_file = tmp_path / "syn.json"
    json_file.write_bytes('{"生年月日": ["誕生日"]}'.encode("shift_jis"))
    with pytest.raises(ValueError, match=r"^synonym file .*syn.json: not UTF-8 text"):
        cli.run(cli_args(synonyms=str(json_file)))


STAND_IN_USER_DIC = b"stand-in user.dic"


def stand_in_chikkarpy(monkeypatch):
    """A chikkarpy stand-in (the package cannot be installed here): 誕生日 -> 生年月日 only with the user.dic."""
    import importlib.machinery

    class Dictionary:
        def __init__(self, filename=None):
            self.filename = filename

    class Chikkar:
        def __init__(self):
            self.dictionaries = []

        def add_dictionary(self, dictionary):
            self.dictionaries.insert(0, dictionary)

        def enable_verb(self):
            pass

        def find(self, word):
            with_user_dic = any(d.filename and Path(d.filename).read_bytes() == STAND_IN_USER_DIC
                                for d in self.dictionaries)
            return ["生年月日"] if word == "誕生日" and with_user_dic else []

    package = type(sys)("chikkarpy")
    package.Chikkar, package.__spec__ = Chikkar, importlib.machinery.ModuleSpec("chikkarpy", None)
    dictionarylib = type(sys)("chikkarpy.dictionarylib")
    dictionarylib.Dictionary = Dictionary
    monkeypatch.setitem(sys.modules, "chikkarpy", package)
    monkeypatch.setitem(sys.modules, "chikkarpy.dictionarylib", dictionarylib)


def test_auto_synonyms_use_chikkarpy_with_user_dic(metric, tmp_path, monkeypatch):
    stand_in_chikkarpy(monkeypatch)
    user_dic = tmp_path / "user.dic"
    user_dic.write_bytes(STAND_IN_USER_DIC)
    tokens = helper(metric, "tokens")
    assert tokens.make_synonyms("auto", user_dic).description == "chikkarpy system dictionary + user.dic"
    result = metric.compute(predictions=[birthday("誕生日")], references=[birthday("生年月日")],
                            dictionary="core", synonyms="auto", user_dic=str(user_dic), cache=False)
    assert result["r"]["f1"] == 1.0 and result["synonyms"] == "chikkarpy system dictionary + user.dic"


def test_cli_auto_downloads_user_dic_when_chikkarpy_is_installed(tmp_path, http_server, monkeypatch):
    stand_in_chikkarpy(monkeypatch)
    mirror = tmp_path / "mirror"
    (mirror / "jemhopqa").mkdir(parents=True)
    (mirror / "jemhopqa" / "user.dic").write_bytes(STAND_IN_USER_DIC)
    import datasets

    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", tmp_path / "downloads")
    monkeypatch.setattr(cli, "USER_DIC_SHA256", hashlib.sha256(STAND_IN_USER_DIC).hexdigest())
    pred, gold = tmp_path / "pred.json", tmp_path / "data" / "corpus_ver1.2" / "dev_ver1.2.json"
    qid = sample_rows()[0]["qid"]
    pred.write_text(json.dumps({"answer": {qid: "794年"}, "derivations": {qid: birthday("誕生日")["derivations"]}},
                               ensure_ascii=False), encoding="utf-8")
    gold.parent.mkdir(parents=True)
    gold_rows = [{**sample_rows()[0], **birthday("生年月日"), "qid": qid}]
    gold.write_text(json.dumps(gold_rows, ensure_ascii=False), encoding="utf-8")
    shutil.copy(SAMPLE / "corpus_ver1.2" / "train_ver1.2.json", gold.parent)
    args = cli_args(predictions=str(pred), references=str(gold), synonyms="auto", mirror_url=http_server(mirror))
    result = cli.run(args)
    assert result["r"]["f1"] == 1.0 and result["synonyms"].startswith("chikkarpy system dictionary + user.dic ")
    assert list((tmp_path / "downloads").iterdir())  # the download went to the (patched) datasets cache
    (mirror / "jemhopqa" / "user.dic").write_bytes(b"tampered")
    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", tmp_path / "downloads2")
    with pytest.warns(UserWarning, match="user.dic could not be downloaded: .*checksum mismatch"):
        result = cli.run(args)
    assert result["r"]["f1"] == 0.0
    assert result["synonyms"].startswith("chikkarpy system dictionary (user.dic could not be downloaded: ")


def test_per_question_file_writes_values_as_the_official_script(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"answer": {Q1: "星の歌", Q2: "", Q3: "いいえ"},
                                "derivations": {Q1: [], Q2: [["x", "y", ["z"]]], Q3: []}}, ensure_ascii=False),
                    encoding="utf-8")
    out = tmp_path / "scores.tsv"
    run_and_write(cli_args(predictions=str(pred), per_question=str(out)))
    lines = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    # Q1: no predicted triples: the official `else 0` gives int 0 for p and f ("0"), recall 0.0 / n is "0.0"
    assert lines[1][1:6] == ["1.0", "1.0", "0", "0.0", "0"]
    assert lines[2][1:3] == ["0.0", "0.0"]  # empty answer: the official 0.0, 0.0


def test_tuple_derivations_are_accepted_as_lists(metric):
    as_tuples = {**row(), "derivations": (("平安京", "遷都された年", ("794年",)),)}
    assert metric.compute(predictions=[as_tuples], references=[row()], **CORE)["er"]["f1"] == 1.0


def test_requirements_match_the_package_extras():
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = {*extras["jemhopqa"], *extras["ilp"], "evaluate>=0.4.3,<0.5"}
    listed = (registry.metric_dir("jemhopqa") / "requirements.txt").read_text(encoding="utf-8").split()
    assert wanted <= set(listed), wanted - set(listed)


# --- llm-jp-eval's scores (v1.3.0: utils.py get_evaluation_result, datasets/jemhopqa.py) -------------------


def llm_jp_eval_reference(output, answer):
    """llm-jp-eval v1.3.0's per-example recipe, with the real fuzzywuzzy (python-Levenshtein installed)."""
    import unicodedata

    from fuzzywuzzy import fuzz

    y_pred = unicodedata.normalize("NFKC", output.split("\n\n")[0].strip())
    y_true = unicodedata.normalize("NFKC", answer)
    return {"exact_match": 1.0 if y_pred == y_true else 0.0, "char_f1": fuzz.token_sort_ratio(y_pred, y_true) / 100.0}


def test_fuzzywuzzy_here_uses_python_levenshtein():
    from fuzzywuzzy import fuzz

    assert fuzz.SequenceMatcher.__module__ == "fuzzywuzzy.StringMatcher"  # not difflib's SequenceMatcher


@pytest.mark.parametrize("output, answer, exact_match, char_f1", [
    ("東京都", "東京", 0.0, 0.8),                 # one token each: Indel distance 1 over 5 characters
    ("東京\n\n東京は首都です。", "東京", 1.0, 1.0),  # only the first paragraph is read
    ("  ＹＥＳ \n", "YES", 1.0, 1.0),             # stripped, then NFKC (full-width letters)
    ("yes", "YES", 0.0, 1.0),                    # exact match is case-sensitive, char_f1 lower-cases
    ("café", "cafe", 0.0, 0.86),                 # é (U+00E9) is removed: "caf" vs "cafe" = 6/7 -> 86
    ("Zoë", "Zoe", 0.0, 0.8),                    # "zo" vs "zoe" = 4/5
    ("b a", "a b", 0.0, 1.0),                    # tokens sorted
    ("!!!", "???", 0.0, 1.0),                    # both process to "": equal strings score 100
    ("", "東京", 0.0, 0.0),                       # one empty string: 0
    ("abcdefgh", "abcdexyz", 0.0, 0.62),         # 10/16 = 62.5: Python's round() gives 62, not 63
    ("abcdefgh", "abcdefgz", 0.0, 0.88),         # 14/16 = 87.5 -> 88
    ("x_y", "x y", 0.0, 0.67),                   # "_" is a word character: one token "x_y" vs "x y" = 4/6
    ("㍻", "平成", 1.0, 1.0),                     # NFKC
    ("1922年", "1921年", 0.0, 0.8),
])
def test_llm_jp_eval_scores_by_hand(metric, output, answer, exact_match, char_f1):
    llm = helper(metric, "llm_jp_eval")
    assert llm.example_scores(output, answer) == {"exact_match": exact_match, "char_f1": char_f1}
    assert llm_jp_eval_reference(output, answer) == {"exact_match": exact_match, "char_f1": char_f1}


LATIN1_JAPANESE = "aAbBzZ09_ -.,!?éÉüÿ×÷·°²½ßİıǅ東京都大阪年月日はいいえ「」（）ＡＢ１２　\t\n\u00a0\u3000"
mixed_text = st.one_of(st.text(max_size=30), st.text(alphabet=LATIN1_JAPANESE, max_size=30),
                       st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x3FF), max_size=30))


@settings(max_examples=1000, deadline=None)
@given(mixed_text, mixed_text)
def test_token_sort_ratio_equals_fuzzywuzzy(metric, a, b):
    from fuzzywuzzy import fuzz

    assert helper(metric, "llm_jp_eval").token_sort_ratio(a, b) == fuzz.token_sort_ratio(a, b)


@settings(max_examples=500, deadline=None)
@given(mixed_text, mixed_text)
def test_llm_jp_eval_example_scores_equal_the_recipe(metric, output, answer):
    assert helper(metric, "llm_jp_eval").example_scores(output, answer) == llm_jp_eval_reference(output, answer)


@settings(max_examples=500, deadline=None)
@given(mixed_text, mixed_text)
def test_rapidfuzz_ratio_equals_levenshtein_ratio(a, b):
    import Levenshtein
    from rapidfuzz import fuzz

    assert fuzz.ratio(a, b) == 100 * Levenshtein.ratio(a, b)


def test_llm_jp_eval_in_the_result(metric):
    rows = sample_rows()
    preds = [{**records(json.loads((SAMPLE / "predictions.json").read_text("utf-8")))[i]} for i in range(3)]
    result = metric.compute(predictions=preds, references=rows, per_question=True, **CORE)
    # 星の歌 = 星の歌; 1921年 vs 1922年: 0.8; いいえ vs NO: 0 (no word in common, different lengths)
    assert [r["char_f1"] for r in result["per_question"]] == [1.0, 0.8, 0.0]
    assert result["llm_jp_eval"] == {"exact_match": pytest.approx(1 / 3), "char_f1": pytest.approx(0.6)}
    assert (result["replies"], result["unparseable"], result["derivations_unreadable"]) == (0, 0, 0)


# --- replies: free-form model output --------------------------------------------------------------------------

ABC_STEP = [["a", "b", ["c"]]]


@pytest.mark.parametrize("reply, answer, derivations, read", [
    ('回答: 東京\n導出: [["a", "b", ["c"]]]', "東京", ABC_STEP, True),
    ('**回答**：東京\n**導出**:\n```json\n[["a", "b", "c"]]\n```', "東京", ABC_STEP, True),  # markdown, one object
    ('導出: [["a", "b", ["c"]]]\n回答: 東京', "東京", ABC_STEP, True),
    ('東京\n導出: [["a", "b", ["c"]]]', "東京", ABC_STEP, True),          # no answer marker: text before 導出
    ("東京です。\n\n理由: ...", "東京です。", [], False),                  # plain reply: its first paragraph
    ("  東京  ", "東京", [], False),
    ("回答: **東京**", "東京", [], False),
    ("回答: *東京", "*東京", [], False),
    ('回答: 東京\n導出: [["a", "b"]]', "東京", [], False),                # a step of two: unreadable
    ('回答: 東京\n導出: [["a", "b", [null]]]', "東京", [], False),
    ('回答: 東京\n導出: [["a", "b", ["c"]', "東京", [], False),           # broken JSON
    ('回答: 東京\n導出: {"a": 1}', "東京", [], False),
    ('回答: 東京\n導出: 東京は首都 [["a", "b", ["c"]]]', "東京", [], False),  # text before the list
    ("導出: []", None, [], True),
    ('導出: [{"subject": "a", "relation": "b", "objects": ["c"]}, ["x", 1, [2.5]]]', None,
     [["a", "b", ["c"]], ["x", "1", ["2.5"]]], True),
    ("回答: \ud800東京", "\ufffd東京", [], False),                          # lone surrogate replaced
    ('導出: [["\\ud800", "b", ["c"]]]', None, [["\ufffd", "b", ["c"]]], True),
    ("", None, [], False),
    (" \n\n ", None, [], False),
    (None, None, [], False),
    (42, None, [], False),
    (["回答: 東京"], None, [], False),
])
def test_reply_parser(metric, reply, answer, derivations, read):
    parsed = helper(metric, "replies").parse_reply(reply)
    assert (parsed.answer, parsed.derivations, parsed.derivations_read) == (answer, derivations, read)


def test_replies_as_predictions_with_a_dataset_as_references(metric, tmp_path):
    built = qahub.load("jemhopqa", "v1.2", data_dir=SAMPLE, cache_dir=str(tmp_path))["validation"]
    task = helper(metric, "task_api")
    targets = [task.derivations_target(doc) for doc in built]
    result = metric.compute(predictions=targets, references=built, **CORE)
    assert all(result[part] == {"prec": 1.0, "recall": 1.0, "f1": 1.0} for part in ("e", "r", "er"))
    assert result["a"] == {"em": 1.0, "score": 1.0}
    assert (result["replies"], result["unparseable"], result["derivations_unreadable"]) == (3, 0, 0)
    # llm-jp-eval reads the whole first paragraph of a reply: the derivations format is not its format
    assert result["llm_jp_eval"]["exact_match"] == 0.0
    plain = metric.compute(predictions=["星の歌", "1921年\n\n理由", None], references=built, per_question=True, **CORE)
    assert plain["llm_jp_eval"] == {"exact_match": pytest.approx(1 / 3), "char_f1": pytest.approx(0.6)}
    assert plain["a"] == {"em": pytest.approx(1 / 3), "score": pytest.approx(1 / 3)}
    assert plain["er"] == {"prec": 0.0, "recall": 0.0, "f1": 0.0}
    assert (plain["replies"], plain["unparseable"], plain["derivations_unreadable"]) == (3, 1, 3)


def test_records_and_replies_mix_by_qid_and_position(metric):
    rows = sample_rows()
    record = {"qid": Q3, "answer": "NO", "derivations": rows[2]["derivations"]}
    result = metric.compute(predictions=["星の歌", 7, record], references=rows, per_question=True, **CORE)
    assert [r["a_em"] for r in result["per_question"]] == [1.0, 0.0, 1.0]
    assert [r["er_f"] for r in result["per_question"]] == [0, 0, 1.0]
    assert (result["replies"], result["unparseable"]) == (2, 1)
    with pytest.raises(ValueError, match=rf"1 qid\(s\) predicted by both a reply and a record: '{Q1}'"):
        metric.compute(predictions=["星の歌", {**record, "qid": Q1}], references=rows, **CORE)
    with pytest.raises(ValueError, match=r"prediction 3 is a reply .* only 3 references"):
        metric.compute(predictions=["a", "b", "c", "d"], references=rows, **CORE)
    with pytest.raises(ValueError, match=r"reference for qid 'q1': missing derivations"):
        metric.compute(predictions=["a"], references=[{"qid": "q1", "answer": "x"}], **CORE)


def test_replies_repeat_qids_of_the_references(metric):
    result = metric.compute(predictions=["794年", "x"], references=[row(), row()], per_question=True, **CORE)
    assert [r["a_em"] for r in result["per_question"]] == [1.0, 0.0]


def test_replies_added_in_batches_pair_by_overall_position(metric):
    rows = sample_rows()
    whole = metric.compute(predictions=["星の歌", "x", "NO"], references=rows, **CORE)
    metric.add_batch(predictions=["星の歌"], references=rows[:2])
    metric.add_batch(predictions=["x", "NO"], references=rows[2:])
    assert metric.compute(**CORE) == whole
    assert whole["a"]["em"] == pytest.approx(2 / 3)


# --- lm-evaluation-harness tasks (task_api) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def task_api():
    import importlib

    return importlib.import_module("qahub.metrics.jemhopqa.task_api")  # as the generated utils.py imports it


@pytest.fixture(scope="module")
def sample_splits(tmp_path_factory):
    cache = tmp_path_factory.mktemp("jemhopqa-cache")
    return {config: qahub.load("jemhopqa", config, data_dir=SAMPLE, cache_dir=str(cache))
            for config in ("v1.0", "v1.1", "v1.2")}


def test_task_table(task_api):
    assert set(task_api.TASKS) == {"qahub_jemhopqa", "qahub_jemhopqa_derivations"}
    for spec in task_api.TASKS.values():
        assert (spec.configs, spec.splits, spec.fewshot_split, spec.until) == (
            ("v1.2", "v1.1", "v1.0"), ("validation",), "train", ("\n\n", "\n質問"))  # a base model's next question
        assert spec.target_delimiter == ""  # the answer right after "### 応答:\n", as llm-jp-eval
    assert set(task_api.TASKS["qahub_jemhopqa"].metrics) == {"exact_match", "char_f1", "unparseable"}
    assert set(task_api.TASKS["qahub_jemhopqa_derivations"].metrics) == {
        "a_em", "a_score", "e_f1", "r_f1", "er_f1", "unparseable"}
    assert task_api.mean([]) == 0.0 and task_api.mean([0.5, 1.0]) == 0.75


def test_answer_prompt_is_llm_jp_evals(task_api, sample_splits):
    doc = sample_splits["v1.2"]["validation"][0]
    assert task_api.answer_prompt(doc) == (
        "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。要求を適切に満たす応答を書きなさい。\n\n"
        "### 指示:\n質問を入力とし、回答を出力してください。回答の他には何も含めないことを厳守してください。"
        "回答が'はい'と'いいえ'で答えることができる場合、'YES'と'NO'で答えてください。\n\n"
        "### 入力:\n質問：『星の歌』と『月の歌』、発売日が早いのはどちら？\n\n### 応答:\n")
    assert "導出: " in task_api.derivations_prompt(doc) and "回答: " in task_api.derivations_prompt(doc)
    assert task_api.derivations_target(doc) == (
        '回答: 星の歌\n導出: [["星の歌", "発売日", ["2001年4月1日"]], ["月の歌", "発売日", ["2003年9月9日"]]]')


@pytest.mark.parametrize("name", ["qahub_jemhopqa", "qahub_jemhopqa_derivations"])
def test_oracle_gets_the_top_score_on_every_sample_doc(task_api, sample_splits, name):
    spec = task_api.TASKS[name]
    for config, splits in sample_splits.items():
        for split, docs in splits.items():
            for doc in docs:
                target = spec.target(doc)
                assert "\n\n" not in target
                scores = spec.score(target, doc)
                assert scores.pop("unparseable") == 0.0
                assert all(value == 1.0 for value in scores.values()), (config, split, doc["qid"], scores)


GARBAGE = ["", " ", "\n\n", "x" * 10_000, "# 回答\n- **東京**", '{"answer": ', "```json\n[[\"a\"", "\ud800", "回答:",
           "導出: [[1, 2, 3]", None, 42, 1.5, ["回答: 星の歌"], {"answer": "星の歌"}, b"bytes"]


@pytest.mark.parametrize("name", ["qahub_jemhopqa", "qahub_jemhopqa_derivations"])
def test_garbage_replies_score_low_and_are_counted(task_api, sample_splits, name):
    spec = task_api.TASKS[name]
    docs = list(sample_splits["v1.2"]["validation"])
    values = [spec.score(reply, doc) for reply in GARBAGE for doc in docs]
    for metric_name, (aggregation, _) in spec.metrics.items():
        items = [v[metric_name] for v in values]
        total = sum(items) / len(items) if aggregation == "mean" else aggregation(items)
        assert math.isfinite(total) and 0.0 <= total <= 1.0
        if metric_name != "unparseable":
            assert total < 0.1, (metric_name, total)
    unreadable = sum(v["unparseable"] for v in values) / len(values)
    # answer task: unreadable = an empty first paragraph (3), an empty 回答 line (1), a lone surrogate (1) or not a
    # string (6); derivations: all 16
    assert unreadable == (11 / 16 if name == "qahub_jemhopqa" else 1.0)


@pytest.mark.quick
def test_harness_and_metric_give_the_same_numbers(metric, task_api, sample_splits):
    docs = sample_splits["v1.2"]["validation"]
    replies = ['回答: 星の歌\n導出: [["星の歌", "発売日", ["2001年4月1日"]], ["月の歌", "発売", ["2003年"]]]',
               "1922年\n\n東山大学の創設者は田中次郎", None]
    config = task_api.configuration()
    assert config == {"dictionary": helper(metric, "tokens").pick_dictionary(None), "synonyms": "none"}
    # the task's signature says so, with the mode and solver the scorer uses
    assert task_api.TASKS["qahub_jemhopqa_derivations"].configuration() == {
        "scorer": "jemhopqa-official", "tokenizer": "sudachi", "mode": "C", **config, "solver": "assignment"}
    result = metric.compute(predictions=replies, references=docs, per_question=True, **config)
    # the answer task scores the answer a reply states (answer_text: its 回答 line): the metric given that answer
    read = metric.compute(predictions=[task_api.answer_text(r) for r in replies], references=docs,
                          per_question=True, **config)
    columns = {"a_em": "a_em", "a_score": "a_score", "e_f1": "e_f", "r_f1": "r_f", "er_f1": "er_f"}
    for reply, doc, row_scores, answer_row in zip(replies, docs, result["per_question"], read["per_question"],
                                                  strict=True):
        derivations = task_api.score_derivations(reply, doc)
        assert {key: derivations[key] for key in columns} == {key: row_scores[c] for key, c in columns.items()}
        answer = task_api.score_answer(reply, doc)
        assert (answer["exact_match"], answer["char_f1"]) == (answer_row["exact_match"], answer_row["char_f1"])
    first = task_api.score_derivations(replies[0], docs[0])
    assert first["a_em"] == 1.0 and 0.0 < first["er_f1"] < 1.0 and first["unparseable"] == 0.0


def test_cli_reads_a_json_list_of_replies(metric, tmp_path):
    pred = tmp_path / "replies.json"
    replies = ['回答: 星の歌\n導出: [["星の歌", "発売日", ["2001年4月1日"]], ["月の歌", "発売日", ["2003年9月9日"]]]',
               "1922年", None]
    pred.write_text(json.dumps(replies, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=r"replies\.json: a list of 3 replies without ids: .*--by-position"):
        cli.run(cli_args(predictions=str(pred)))  # a bare list is paired by position only when the user says so
    result = scores_of(cli_args(predictions=str(pred), by_position=True))
    assert result == metric.compute(predictions=replies, references=sample_rows(), **CORE)
    assert result["a"]["em"] == pytest.approx(2 / 3)
    assert (result["replies"], result["unparseable"], result["derivations_unreadable"]) == (3, 1, 2)
    # llm-jp-eval reads the first reply whole (one paragraph); 1922年 is exact; None reads as ""
    first = llm_jp_eval_reference(replies[0], "星の歌")["char_f1"]
    assert first == 0.12
    assert result["llm_jp_eval"] == {"exact_match": pytest.approx(1 / 3), "char_f1": pytest.approx((first + 1) / 3)}


def test_references_straight_from_load_dataset_of_an_export(metric, sample_exports, tmp_path):
    import datasets

    dev = datasets.load_dataset(str(sample_exports["jemhopqa"]), "v1.2", cache_dir=str(tmp_path / "hf"))["validation"]
    assert isinstance(dev, datasets.Dataset) and isinstance(dev[0]["derivations"][0], dict)
    preds = records(json.loads((SAMPLE / "predictions.json").read_text(encoding="utf-8")))
    assert metric.compute(predictions=preds, references=dev, **CORE) == metric.compute(
        predictions=preds, references=sample_rows(), **CORE)
    replies = [helper(metric, "task_api").derivations_target(doc) for doc in dev]
    assert metric.compute(predictions=replies, references=dev, **CORE)["er"]["f1"] == 1.0


@pytest.mark.parametrize("relpath", ["corpus/dev.json", "corpus_ver1.1/dev_ver1.1.json", "corpus_ver1.2/dev_ver1.2.json",
                                     "corpus_ver1.2/train_ver1.2.json"])
def test_oracle_top_on_the_real_data(task_api, relpath):
    rows = real_rows(relpath)
    for name, spec in task_api.TASKS.items():
        for doc in rows:
            target = spec.target(doc)
            assert "\n\n" not in target
            scores = spec.score(target, doc)
            assert scores.pop("unparseable") == 0.0 and set(scores.values()) == {1.0}, (name, doc["qid"], scores)


# how tests/test_predictions.py scores this corpus's gold replies against its sample export: the metric
# command and its options, the config and split read, the reply field, and (id fields, gold reply) of each
# prediction a row of that split gives
PREDICTION_CASE = dict(
    corpus="jemhopqa", metric=["jemhopqa", "--synonyms", "none"], config="v1.2", split="validation", reply="reply",
    items=lambda row: [({"qid": row["qid"]}, f"回答: {row['answer']}")], gold="answer")


# --- issue 44: `--data-dir` reads the upstream files without `datasets`


def test_data_dir_rows_are_the_builder_s_rows_read_without_datasets(tmp_path):
    """The builder's own row reader (loaders/_jemhopqa_files.py), called for one file: the rows ``qahub.load``
    gives, for every config and split of the sample."""
    for config, splits in registry.catalog()["jemhopqa"]["configs"].items():
        if config in ("sft", "messages"):  # training configs: made of an export, not read from upstream files
            continue
        built = qahub.load("jemhopqa", config, data_dir=SAMPLE, cache_dir=str(tmp_path / "cache"))
        for split in splits:
            rows, where = cli.load_references(None, str(SAMPLE), config, split)
            assert rows == built[split].to_list(), (config, split)
            assert where == f"jemhopqa {config}/{split} built from {SAMPLE}"


def test_data_dir_errors_name_the_file_the_config_or_the_split(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"corpus_ver1.2/dev_ver1.2.json: source file not found"):
        cli.load_references(None, str(tmp_path), "v1.2", "validation")
    with pytest.raises(ValueError, match=r"^jemhopqa has no config 'v9' \(configs: v1.0, v1.1, v1.2\)$"):
        cli.load_references(None, str(SAMPLE), "v9", "validation")
    with pytest.raises(ValueError, match=r"config v1.2 has no split 'test' \(splits: train, validation\)"):
        cli.load_references(None, str(SAMPLE), "v1.2", "test")
    damaged = tmp_path / "data" / "corpus_ver1.2"
    damaged.mkdir(parents=True)
    (damaged / "dev_ver1.2.json").write_text('[{"qid": 1}]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"dev_ver1.2.json.*0.*missing key"):
        cli.load_references(None, str(tmp_path / "data"), "v1.2", "validation")


SCORE_AND_LIST_MODULES = """
import contextlib, io, json, sys
from qahub import cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = cli.main(["--quiet", "evaluate", "jemhopqa", *sys.argv[1:]])
scores = json.loads(out.getvalue())
print(json.dumps([code, {part: scores[part] for part in ("a", "e", "r", "er")}, sorted(sys.modules)]))
"""


def test_scoring_from_a_data_dir_imports_neither_datasets_nor_pandas_nor_pyarrow():
    """`qahub evaluate jemhopqa --data-dir` in a fresh process: the scores, and none of datasets, pandas,
    pyarrow, fsspec or huggingface_hub imported, nor scipy.optimize's package (issue 44: about 1 s of the 1.5 s
    budget): the derivations' exact assignment is scipy's linear_sum_assignment read from its own module, and
    scores as this process does, where scipy.optimize is imported whole."""
    done = subprocess.run([sys.executable, "-c", SCORE_AND_LIST_MODULES, "--predictions", str(SAMPLE / "predictions.json"),
                           "--data-dir", str(SAMPLE), "--config", "v1.2", "--dictionary", "core", "--synonyms", "none"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    code, scores, modules = json.loads(done.stdout.splitlines()[-1])
    import scipy.optimize  # noqa: F401  (here the public function scores)

    expected = scores_of(cli_args())
    assert code == 0 and scores == {part: expected[part] for part in scores} and scores["er"]["f1"] > 0
    assert not {"datasets", "pandas", "pyarrow", "fsspec", "huggingface_hub"} & {name.split(".")[0] for name in modules}
    assert "scipy.optimize" not in modules and "scipy.linalg" not in modules
