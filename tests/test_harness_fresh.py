"""The lm-eval tasks qahub writes (issue 19 items 1 and 3), run through lm-eval's own ``simple_evaluate`` and
few-shot sampler: their documents are read from the export's files at each run (a rebuilt export needs no new
``harness-tasks``), and no demonstration is the document being asked."""

import json
import shutil

import datasets
import pytest

pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from qahub import cli, harness, planning, registry  # noqa: E402
from qahub.export.writer import export  # noqa: E402

DEV = "corpus_ver1.2/dev_ver1.2.json"


class Parrot(LM):
    """Replies to every request with the last line of its prompt: the reply does not matter here."""

    def generate_until(self, requests):
        return [request.args[0].splitlines()[-1] for request in requests]

    def loglikelihood(self, requests):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests):
        raise NotImplementedError


def write_tasks(out, locations):
    argv = ["--quiet", "harness-tasks", "--out", str(out)]
    for corpus, location in locations.items():
        argv += ["--dataset", f"{corpus}={location}"]
    assert cli.main(argv) == 0
    return TaskManager(include_path=str(out)), json.loads((out / harness.MARKER).read_text(encoding="utf-8"))


def run(manager, tasks, **kwargs):
    return simple_evaluate(model=Parrot(), tasks=tasks, task_manager=manager, bootstrap_iters=0, log_samples=True,
                           **kwargs)


def test_tasks_read_an_export_rebuilt_in_place(tmp_path, monkeypatch):
    """Tasks written once; the export rebuilt with a corrected gold answer; lm-eval run again in the same process
    with the same datasets cache: the documents hold the new gold."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    source, folder = tmp_path / "src", tmp_path / "jemhopqa"
    shutil.copytree(registry.samples_dir("jemhopqa"), source)
    build = ["--quiet", "build", "jemhopqa", "--data-dir", str(source), "--config", "v1.2", "--out", str(folder)]
    assert cli.main(build) == 0
    manager, _ = write_tasks(tmp_path / "tasks", {"jemhopqa": folder})

    def targets():
        return [s["target"] for s in run(manager, ["qahub_jemhopqa"], limit=1)["samples"]["qahub_jemhopqa"]]

    assert targets() == ["星の歌"]
    records = json.loads((source / DEV).read_text(encoding="utf-8"))
    records[0]["answer"] = "月の歌"  # same length: the README may not change
    (source / DEV).write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    assert cli.main([*build, "--overwrite"]) == 0
    assert targets() == ["月の歌"]


@pytest.fixture(scope="module")
def limur_without_shots(tmp_path_factory):
    """The LIMUR sample exported without its ``shots`` split."""
    root = tmp_path_factory.mktemp("limur")
    shutil.copytree(registry.samples_dir("limur"), root / "source", ignore=shutil.ignore_patterns("shots.jsonl"))
    export("limur", root / "limur", data_dir=root / "source", cache_dir=root / "cache", sample=True)
    return root / "limur"


def demonstrated(task, sample) -> bool:
    """Whether the prompt of ``sample`` shows its own document, question and gold, as a demonstration."""
    doc = sample["doc"]
    shown = task.doc_to_text(doc) + task.config.target_delimiter + str(task.doc_to_target(doc))
    return shown in sample["arguments"][0][0]


def assert_no_self_demonstration(manager, tasks, limit=6):
    result = run(manager, tasks, num_fewshot=2, limit=limit)
    loaded = manager.load(tasks)["tasks"]
    for name in tasks:
        samples = result["samples"][name]
        assert samples, name
        for sample in samples:
            context = sample["arguments"][0][0]
            assert context.count(loaded[name].config.fewshot_delimiter) >= 2, (name, context[:300])
            assert not demonstrated(loaded[name], sample), (name, context[:500])


def test_every_task_sets_its_fewshot_split_and_never_shows_the_document_itself(sample_exports, tmp_path):
    manager, plan = write_tasks(tmp_path / "tasks", sample_exports)
    for name, entry in plan.items():
        spec = planning.task_api(entry["corpus"]).TASKS[name]
        own = spec.fewshot_split in planning.splits(entry["location"], entry["config"])
        assert entry["fewshot_split"] == (spec.fewshot_split if own else entry["split"]), name
    assert plan["qahub_jeopardy"]["fewshot_split"] == plan["qahub_jeopardy"]["split"] == "train"  # extended
    assert_no_self_demonstration(manager, sorted(plan))


def test_a_task_without_its_fewshot_split_samples_the_evaluated_one_without_the_document(limur_without_shots,
                                                                                         tmp_path):
    manager, plan = write_tasks(tmp_path / "tasks", {"limur": limur_without_shots})
    assert plan["qahub_limur"]["fewshot_split"] == plan["qahub_limur"]["split"]
    assert_no_self_demonstration(manager, ["qahub_limur"], limit=None)
