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
from qahub.scoring import jemhopqa as cli
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


@pytest.mark.parametrize("case", sorted(OFFICIAL["cases"]))
def test_matches_official_scores(metric, case):
    spec = OFFICIAL["cases"][case]
    real_dev = real_rows(spec.get("dev", OFFICIAL["dev"]))
    options = dict(spec["options"])
    synonyms = SYNONYMS if options.pop("synonyms", None) == "SYNONYMS" else "none"
    preds = records(make_predictions(real_dev, spec["predictions"]))
    result = metric.compute(predictions=preds, references=real_dev, dictionary="core", synonyms=synonyms,
                            per_question=True, **options)
    assert_scores_close(result, spec["scores"])
    assert len(result["per_question"]) == len(real_dev)
    if case == "partial":
        return  # the official script crashes when asked for per-question scores of partial input
    for ours, official in zip(result["per_question"], spec["per_question"], strict=True):
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
    nothing = metric.compute(predictions=[], references=rows, ignore_missing=True, **CORE)
    assert math.isnan(nothing["a"]["em"]) and math.isnan(nothing["er"]["f1"])  # the official np.mean([])


# --- bad input -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pred, message", [
    ({"qid": "zz", "answer": "x", "derivations": []}, r"1 predicted qid\(s\) are not in the references: 'zz'"),
    ({"qid": "q1", "answer": "x", "derivations": "A, B, C"}, r"prediction for qid 'q1': derivations must be a list"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", "B"]]}, r"qid 'q1': derivation step \['A', 'B'\] must be"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", 3, ["C"]]]}, r"qid 'q1': derivation step .* string subject"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", "B", "C"]]}, r"qid 'q1': objects of derivation step .* list of str"),
    ({"qid": "q1", "answer": "x", "derivations": [["A", "B", ["C", None]]]}, r"qid 'q1': objects of derivation step"),
    ({"qid": 7, "answer": "x"}, r"prediction 0: 'qid' must be a string, got 7"),
    (["q1", "x", []], r"prediction 0: expected a record"),
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

_ISOLATED = textwrap.dedent("""
    import json, sys

    class BlockQahub:
        def find_spec(self, name, path=None, target=None):
            if name == "qahub" or name.startswith("qahub."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, BlockQahub())
    try:
        import qahub  # noqa: F401
        raise SystemExit("qahub is still importable")
    except ModuleNotFoundError:
        pass
    import evaluate
    metric = evaluate.load(sys.argv[1])
    row = {"qid": "q1", "answer": "794年", "derivations": [["平安京", "遷都された年", ["794年"]]]}
    result = metric.compute(predictions=[row], references=[row], dictionary="core", synonyms="none")
    assert not any(name.split(".")[0] == "qahub" for name in sys.modules)
    print(json.dumps(result))
""")


def test_loads_without_qahub(tmp_path):
    copy = shutil.copytree(registry.metric_dir("jemhopqa"), tmp_path / "jemhopqa",
                           ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    done = subprocess.run([sys.executable, "-c", _ISOLATED, str(copy)], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["er"] == {"prec": 1.0, "recall": 1.0, "f1": 1.0} and result["dictionary"] == "core"


# --- command line --------------------------------------------------------------------------------------------


def cli_args(**kwargs):
    base = {"predictions": str(SAMPLE / "predictions.json"), "references": str(SAMPLE_DEV), "config": None,
            "split": "validation", "data_dir": None, "ignore_missing": False, "per_question": None,
            "dictionary": "core", "synonyms": "none", "user_dic": None, "mirror_url": None, "solver": "assignment"}
    return argparse.Namespace(**{**base, **kwargs})


def test_cli_formats_and_references_agree(metric, tmp_path):
    expected = metric.compute(predictions=records(json.loads((SAMPLE / "predictions.json").read_text("utf-8"))),
                              references=sample_rows(), **CORE)
    assert cli.run(cli_args()) == expected
    assert cli.run(cli_args(predictions=str(SAMPLE / "predictions.tsv"))) == expected
    built = cli.run(cli_args(references=None, config="v1.2", data_dir=str(SAMPLE)))
    assert built == expected
    with pytest.raises(ValueError, match="--data-dir goes with --config"):
        cli.run(cli_args(data_dir=str(SAMPLE)))


def test_cli_per_question_file(tmp_path):
    out = tmp_path / "scores.tsv"
    cli.run(cli_args(per_question=str(out)))
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
    result = cli.run(cli_args(predictions=str(pred), ignore_missing=True, per_question=str(out)))
    assert result["a"] == {"em": 1.0, "score": 1.0} and result["er"] == {"prec": None, "recall": None, "f1": None}
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert rows[0][1:4] == ["1.0", "1.0", ""] and rows[1][1:] == [""] * 11


@pytest.mark.parametrize("text, message", [
    ('[{"qid": "x"}]', "not a JEMHopQA prediction file"),
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
    records_read = cli.read_predictions(pred)
    assert records_read == [{"qid": Q1, "answer": "星の歌", "derivations": [["星の歌", "発売日", ["2001年4月1日"]]]}]
    assert "row 1: qid 's1000000000000000000000000000001': derivation step '月の歌は発売日'" in capsys.readouterr().err


def test_cli_command_reports_errors_without_traceback(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text('{"answer": {"zz": "x"}, "derivations": {"zz": []}}', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "qahub.cli", "--quiet", "evaluate", "jemhopqa", "--predictions",
                           str(pred), "--references", str(SAMPLE_DEV), "--dictionary", "core", "--synonyms", "none"],
                          capture_output=True, text=True, env={**os.environ, "HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 1
    assert "predicted qid(s) are not in the references: 'zz'" in done.stderr and "Traceback" not in done.stderr


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
    (H + b"q1\tA\t(a, b, c)\nq1\tB\t(a, b, c)\n", [("q1", "B", ABC)]),  # the last row wins
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
    (H + b"\tA\t(a, b, c)\n", r"pred.tsv: row 1: qid must be text, got nan"),
    (H + b"q1\tA\t(a, b, c)\nq2\tB\t(a, b, c)\tx\n", r"pred.tsv: not a readable prediction TSV .*line 3, saw 4"),
    (b"qid\tanswer\n", r"pred.tsv: not a JEMHopQA prediction file: .* \(missing predicted_answer, predicted_deriv"),
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
    pred, gold = tmp_path / "pred.json", tmp_path / "gold.json"
    pred.write_text(json.dumps({"answer": {"q1": "794年"}, "derivations": {"q1": birthday("誕生日")["derivations"]}},
                               ensure_ascii=False), encoding="utf-8")
    gold.write_text(json.dumps([birthday("生年月日")], ensure_ascii=False), encoding="utf-8")
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
    cli.run(cli_args(predictions=str(pred), per_question=str(out)))
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
