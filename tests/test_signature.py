"""The signature of a score (issue 37 item 1): its JSON round trip, its one-line form, what makes two signatures
different, and how a report's pairing reads it (a differing COMPARED field is a caveat, a field not recorded is
none)."""

from types import SimpleNamespace

import pytest

from qahub import planning
from qahub.report.alike import pairing
from qahub.report.runs import TaskRun
from qahub.signature import (
    COMPARED,
    FIELDS,
    Signature,
    differences,
    logged_fields,
    run_signature,
    scorer_text,
)

FULL = Signature(qahub="0.1.0", task="qahub_jeopardy", task_version="1.0", metric="accuracy",
                 scorer="meteor.alpha=0.9,threshold=0.227743", dataset="jeopardy", config="qa", split="validation",
                 revision="sha256:0123", n_shot=2, prompts="text:abcd", harness="lm-eval", harness_version="0.4.13",
                 judge=None, documents=40, documents_hash="ffee")


def test_a_signature_round_trips_through_json_and_reads_as_one_line():
    import json

    assert Signature.from_dict(json.loads(json.dumps(FULL.to_dict()))) == FULL
    assert list(FULL.to_dict()) == list(FIELDS)
    line = FULL.format()
    assert line.startswith("qahub:0.1.0|task:qahub_jeopardy|task_version:1.0|metric:accuracy|")
    assert "judge" not in line and "|n_shot:2|" in line  # a field not recorded is left out, as sacreBLEU's
    assert Signature().format() == ""


@pytest.mark.parametrize(("data", "message"), [({"shots": 1}, "not a signature field: shots"),
                                                ({"n_shot": "2"}, "Signature.n_shot: not a int"),
                                                ({"documents": True}, "Signature.documents"),
                                                ({"scorer": {"a": 1}}, "Signature.scorer: not a str")])
def test_a_signature_of_the_wrong_shape_is_refused_naming_the_field(data, message):
    with pytest.raises(ValueError, match=message):
        Signature.from_dict(data)


def test_differences_name_the_compared_fields_both_record():
    other = Signature(**{**FULL.to_dict(), "scorer": "meteor.alpha=0.5", "revision": None, "harness": "inspect",
                         "documents": 3})
    assert differences(FULL, other) == ["scorer"]  # revision: not recorded by one; harness, documents: not compared
    assert differences(FULL, None) == [] and differences(Signature(), FULL) == []
    assert set(COMPARED) < set(FIELDS)


def test_scorer_settings_are_one_canonical_string():
    settings = {"threshold": 0.227743, "meteor": {"beta": 3.0, "alpha": 0.9}, "normalize": ["lower", "nfkc"],
                "text": None}
    assert scorer_text(settings) == "meteor.alpha=0.9,meteor.beta=3.0,normalize=lower+nfkc,text=none,threshold=0.227743"
    assert scorer_text(dict(reversed(settings.items()))) == scorer_text(settings)
    assert scorer_text({}) is None and scorer_text(None) is None


def test_each_corpus_declares_its_scorer_settings():
    """Every task's TaskSpec says what its scorer runs with (task_api's configuration), e.g. Jeopardy's METEOR
    parameters from NLTK itself and the accuracy threshold."""
    for name, spec in planning.all_tasks().items():
        assert spec.configuration is not None, name
    jeopardy = planning.all_tasks()["qahub_jeopardy"].configuration()
    assert jeopardy["threshold"] == 0.227743 and jeopardy["meteor"] == {"alpha": 0.9, "beta": 3.0, "gamma": 0.5}
    bleu = planning.all_tasks()["qahub_doc2dial_response"].configuration()["bleu"]
    assert (bleu["tok"], bleu["smooth"], bleu["nrefs"]) == ("13a", "exp", 1)


def test_logged_fields_keep_only_what_a_harness_logs():
    logged = {"qahub": "0.1.0", "scorer": "x=1", "revision": 3, "n_shot": "5", "foreign": "y"}
    assert logged_fields(logged) == {"qahub": "0.1.0", "scorer": "x=1"}
    assert logged_fields(None) == {} and logged_fields("text") == {}


def test_a_run_signature_hashes_documents_as_a_set_and_prompts_by_document():
    one = run_signature("t", {"scorer": "x=1"}, harness="lm-eval", n_shot=0, ids=[2, 1], prompts=["b", "a"])
    two = run_signature("t", {"scorer": "x=1"}, harness="inspect", n_shot=0, ids=[1, 2], prompts=["a", "b"])
    assert (one.documents_hash, one.prompts, one.documents) == (two.documents_hash, two.prompts, 2)
    assert run_signature("t", None, harness="lm-eval", ids=[1], prompts=[None]).prompts is None  # not recorded
    old = run_signature("t", None, harness="inspect", ids=[1])
    assert (old.qahub, old.scorer, old.revision, old.task_version, old.n_shot) == (None,) * 5


def _task_run(signature, **fields):
    base = {"task": "t", "file": "f", "values": {}, "keys": [(0, "a"), (1, "b")], "items": {}, "categories": {},
            "n_shot": 0, "dataset": ("loc", "cfg", "test"), "ids": [0, 1], "prompts": ["p0", "p1"],
            "prompt_format": "raw text", "prompt_hashed": "text", "signature": signature}
    return TaskRun(**{**base, **fields})


def _paired(base, other):
    entry = {"warnings": [], "notes": []}
    pair = pairing("t", SimpleNamespace(name="a", tasks={"t": base}), SimpleNamespace(name="b", tasks={"t": other}))
    pair.record(entry)
    pairs = pair.pairs if pair.compared else None
    return pairs, entry.get("caveats", {}).get("b")


def _signed(**fields):
    return Signature(**{**FULL.to_dict(), "metric": None, **fields})


@pytest.mark.parametrize(("other", "caveats"), [
    (_signed(), None),
    (_signed(scorer="meteor.alpha=0.5"), ["different scorer meteor.alpha=0.9,threshold=0.227743/meteor.alpha=0.5"]),
    (_signed(revision="sha256:9999", task_version="2.0"),
     ["different task version 1.0/2.0", "different revision sha256:0123/sha256:9999"]),
    (_signed(scorer=None, revision=None, qahub=None), None),  # not recorded (an older run): no caveat
    (None, None),  # a run with no signature at all
    (_signed(judge="model=other", harness="inspect", documents=1), None),  # judge: judges.py; the rest recorded only
])
def test_a_pair_whose_signatures_differ_is_marked_with_the_field(other, caveats):
    pairs, found = _paired(_task_run(_signed()), _task_run(other))
    assert pairs is not None and found == caveats


@pytest.mark.parametrize("revision", ["sha256:0123", "sha256:9999"])
def test_a_significant_pair_of_another_revision_is_never_starred(revision):
    """Thirty documents all wrong against all right: starred when the signatures agree, not when the revisions
    differ; each score cell carries its run's signature for its metric."""
    from qahub.report.build import adjust, task_report
    from qahub.report.runs import Run

    spec = planning.all_tasks()["qahub_limur"]
    runs = []
    for name, value, signature in (("a", 0.0, _signed()), ("b", 1.0, _signed(revision=revision))):
        task_run = TaskRun("qahub_limur", f"{name}.jsonl", {"exact_match": value}, [(i, f"h{i}") for i in range(30)],
                           {"exact_match": [value] * 30}, {}, dataset=("d", None, "test"), ids=list(range(30)),
                           signature=signature)
        runs.append(Run(name, name, "model", f"{name}/results.json", tasks={"qahub_limur": task_run}))
    settings = {"baseline": "a", "seed": 1, "resamples": 50, "confidence": 0.95}
    entry = task_report("qahub_limur", spec, runs, "a", settings)
    adjust({"qahub_limur": entry})
    cell = entry["comparisons"]["b"]["exact_match"]
    assert cell["p_holm"] < 0.05
    if revision == "sha256:0123":
        assert cell["star"] and "b" not in entry["caveats"]
    else:
        assert not cell["star"] and cell["no_star"] == "not like with like: different revision sha256:0123/sha256:9999"
    assert entry["scores"]["b"]["exact_match"]["signature"] == _signed(revision=revision, metric="exact_match").to_dict()
