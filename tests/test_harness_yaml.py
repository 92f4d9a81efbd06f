"""lm-eval's task YAML is dumped from a dict (``harness.task_config``, issue 36 item 10), and holds what the YAML
qahub joined from f-strings held: ``fixtures/lm_eval_yaml.json`` is every task's YAML, without and with the
judge, as qahub wrote it before (main of 2026-12-04) for one location that needs quoting."""

import json
from pathlib import Path

import pytest
import yaml

from qahub import harness, planning, tasks

BEFORE = json.loads((Path(__file__).parent / "fixtures" / "lm_eval_yaml.json").read_text(encoding="utf-8"))
LOCATION = '/data/an export: "quoted" #1 é'


class Loader(yaml.SafeLoader):
    """The YAML as lm-eval reads it, a ``!function NAME`` kept as ``("!function", NAME)``."""


Loader.add_constructor("!function", lambda loader, node: ("!function", loader.construct_scalar(node)))


def parsed(text: str) -> dict:
    return yaml.load(text, Loader=Loader)


def written(name: str, judge: bool) -> str:
    spec = planning.all_tasks()[name]
    entry = {"corpus": tasks.task_corpora()[name], "location": LOCATION, "config": spec.configs[0],
             "split": spec.splits[0], "fewshot_split": spec.fewshot_split or spec.splits[0]}
    return harness.task_yaml(name, entry, spec, judge)


def test_every_task_is_compared_with_and_without_its_judge():
    assert set(BEFORE) == {f"{name} judge={judge}" for name in planning.all_tasks() for judge in (False, True)}


@pytest.mark.parametrize("key", sorted(BEFORE))
def test_the_config_lm_eval_reads_is_what_it_was(key):
    name, judge = key.split(" judge=")
    now, before = parsed(written(name, judge == "True")), parsed(BEFORE[key])
    # issue 37: the signature, computed when lm-eval loads the task, holds the scorer's settings (then a dict)
    assert now["metadata"].pop("signature") == ("!function", "utils.signature")
    before["metadata"].pop("scorer", None)
    # issue 43 item 3 set each task's stop sequences and token cap from real models' replies, on purpose: the
    # rest of the YAML is as it was, and these are the task's declaration
    spec = planning.all_tasks()[name]
    assert now.pop("generation_kwargs") == {**before.pop("generation_kwargs"), "until": list(spec.until),
                                            "max_gen_toks": spec.max_gen_toks}
    assert now == before
    assert now["dataset_path"] == LOCATION and ("!function", "utils.process_results") == now["process_results"]


def test_the_group_file_is_yaml_too(tmp_path):
    harness._write_group(tmp_path, "doc2dial", ["qahub_doc2dial_grounding", "qahub_doc2dial_response"])
    text = (tmp_path / "_qahub_doc2dial.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text) == {"group": "qahub_doc2dial", "task": ["qahub_doc2dial_grounding",
                                                                        "qahub_doc2dial_response"],
                                    "metadata": {"version": 1.0}}
