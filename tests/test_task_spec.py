"""The task declaration is a type: a wrong field is an error where the task is declared, and every registered
task is a TaskSpec (from its own metric directory's copy of the type)."""

import dataclasses
import importlib
import re

import pytest

from qahub import tasks
from qahub.tasks import Grader, Metric, TaskSpec


def _score(reply, doc):
    return {"exact_match": float(reply == doc["a"]), "unparseable": 0}


GOOD = {"configs": ["plain"], "splits": ["test"], "prompt": lambda doc: doc["q"], "target": lambda doc: doc["a"],
        "until": ["\n"], "score": _score, "metrics": {"unparseable": ("mean", False), "exact_match": ("mean", True)},
        "oracle": {"exact_match": 1.0}, "binary": ["exact_match"]}


LEFT_OUT = object()  # a field not given


def _grader(**changed):
    return Grader(**{"prompts": lambda reply, doc: [], "max_tokens": 8, "grade": float, "reduce": max,
                     "record": str, **changed})


def test_a_good_declaration_is_normalised_and_takes_the_defaults():
    spec = TaskSpec(**GOOD)
    assert spec.max_gen_toks == 256 and spec.fewshot_split is None and spec.docs is None
    assert (spec.target_delimiter, spec.fewshot_delimiter) == (" ", "\n\n")  # lm-eval's defaults
    assert spec.splits == ("test",) and spec.until == ("\n",) and spec.binary == ("exact_match",)
    assert spec.metrics["exact_match"] == Metric("mean", True) and spec.metrics["exact_match"].higher_is_better
    assert spec.headline == "exact_match"  # the first metric that is not a share of unread replies
    assert TaskSpec(**GOOD, headline="unparseable").headline == "unparseable"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.until = ["\n\n"]


@pytest.mark.parametrize(("changed", "error", "field"), [
    ({"stop": ["\n"]}, TypeError, "stop"),  # a key that is no field
    ({"score": LEFT_OUT}, TypeError, "score"),  # a required field missing
    ({"prompt": "Q: {q}"}, TypeError, "prompt"),
    ({"docs": "conversations"}, TypeError, "docs"),
    ({"categories": {"domain": "domain"}}, TypeError, "categories['domain']"),
    ({"splits": []}, ValueError, "splits"),
    ({"splits": "test"}, TypeError, "splits"),
    ({"until": [None]}, TypeError, "until"),
    ({"max_gen_toks": 0}, ValueError, "max_gen_toks"),
    ({"max_gen_toks": "256"}, ValueError, "max_gen_toks"),
    ({"metrics": {}}, ValueError, "metrics"),
    ({"metrics": {"exact_match": "mean"}}, TypeError, "metrics['exact_match']"),
    ({"metrics": {"exact_match": ("mean", "yes")}}, TypeError, "metrics['exact_match']"),
    ({"oracle": {"exact": 1.0}}, ValueError, "oracle"),
    ({"oracle": {}}, ValueError, "oracle"),
    ({"binary": ["accuracy"]}, ValueError, "binary"),
    ({"headline": "f1"}, ValueError, "headline"),
    ({"metrics": {"unparseable": ("mean", False)}, "oracle": {"unparseable": 0.0}, "binary": []}, ValueError,
     "headline"),
    ({"target_delimiter": None}, TypeError, "target_delimiter"),
    ({"grader": {"max_tokens": 8}}, TypeError, "grader"),
    ({"judge": _score}, ValueError, "judge_metrics"),  # a judge without its metrics
])
def test_a_wrong_declaration_fails_when_made_naming_the_field(changed, error, field):
    fields = {key: value for key, value in {**GOOD, **changed}.items() if value is not LEFT_OUT}
    with pytest.raises(error, match=re.escape(field)):
        TaskSpec(**fields)


def test_a_wrong_grader_fails_when_made():
    with pytest.raises(TypeError, match="Grader.grade"):
        _grader(grade="mera")
    with pytest.raises(ValueError, match="Grader.max_tokens"):
        _grader(max_tokens=0)
    judged = TaskSpec(**GOOD, grader=_grader(), judge_metrics={"judge_score": ("mean", True)})
    assert judged.grader.max_tokens == 8 and set(judged.judge_metrics) == {"judge_score"}


@pytest.mark.parametrize("task", sorted(tasks.all_tasks()))
def test_every_registered_task_is_a_task_spec_of_its_metric_s_copy(task):
    spec = tasks.all_tasks()[task]
    corpus = tasks.task_corpora()[task]
    own = importlib.import_module(f"qahub.metrics.{tasks.scan().metric_of[corpus]}.task_spec").TaskSpec
    assert type(spec) is own and own is not TaskSpec  # each metric directory imports its own copy...
    assert tasks.is_task_spec(spec)  # ...which the check by fields accepts
    assert spec.headline in spec.metrics and spec.headline not in ("unparseable", "abstained")


def test_a_tasks_entry_that_is_not_a_task_spec_is_refused_naming_the_file_and_task(monkeypatch):
    module = tasks.task_api("limur")
    monkeypatch.setitem(module.TASKS, "qahub_limur_dict", {"configs": ["all"], "splits": ["test"]})
    with pytest.raises(tasks.TaskError) as caught:
        tasks.task_api("limur")
    path = tasks.metric_dirs()["limur"] / "task_api.py"
    assert str(caught.value) == (f"{path}: TASKS['qahub_limur_dict'] is a dict, not a TaskSpec "
                                 "(from .task_spec import TaskSpec)")
