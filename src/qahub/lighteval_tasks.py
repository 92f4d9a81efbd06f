"""lighteval tasks: one ``qahub_<name>`` task for each lm-eval task of that name, derived from the same declaration
(the ``TASKS`` table of the corpus's metric ``task_api``) and the same documents.

``QAHUB_LIGHTEVAL_DATA=limur=EXPORT,jemhopqa=ORG/NAME lighteval accelerate MODEL "qahub_limur|2"
--custom-tasks qahub.lighteval_tasks``: each ``CORPUS=LOCATION`` (an export folder or a Hub dataset id, resolved
and read as ``qahub harness-tasks`` reads it) gives that corpus's tasks; ``TASKS_TABLE`` holds them, built when
lighteval first reads it (importing this module reads nothing and needs no lighteval).

A document's query is the lm-eval context as plain text (``planning.prompts``: its demonstrations drawn from the
task's few-shot split by ``planning.Demonstrations`` with lm-eval's seed, in document order, never the document
nor a turn of its conversation), its gold the task's target; generation stops at the task's stop sequences within
its token limit. lighteval's own few-shot sampling is kept out: its plain-text prompt joins a demonstration with
" " and strips it, which is not the task's format. The ``|N`` of a task name is the number of demonstrations.
The details (``--save-details``) hold each document's id, its position and hash as lm-eval logs them
(``doc_id``, ``doc_hash``: ``qahub report`` reads them), the document, and the task's signature fields
(``qahub_signature``: lighteval's results keep no task metadata). One ``SampleLevelMetricGrouping`` gives
every per-document value of the task (the lm-eval task's ``process_results``) and aggregates each as the lm-eval
task does (corpus BLEU over every pair, distinct-n, sums, means). LIMUR's judge values are added when qahub's judge
is configured (as for lm-eval: QAHUB_JUDGE_URL and QAHUB_JUDGE_MODEL, or LM_EVAL_JUDGE_API_BASE and
LM_EVAL_JUDGE_MODEL); the run's replies are then judged at once, concurrently, as lm-eval's judge filter does.

lighteval reads a task's rows with ``datasets.load_dataset(hf_repo, hf_subset)``, one document per row, while a
task whose documents are joined from several rows (doc2dial's agent turns) has more documents than rows; so
``hf_repo`` is a small folder written here (``ROWS``), one row ``{"qahub_index": i}`` per document, and the
documents themselves are read by qahub from LOCATION.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import random
import tempfile
from pathlib import Path

from qahub import planning, tasks

ENV = "QAHUB_LIGHTEVAL_DATA"  # CORPUS=LOCATION,CORPUS=LOCATION
# {"task": [document index, ...]}: lm-eval's --samples (as `qahub pick-docs` prints it); lighteval 0.13's
# --max-samples N draws N documents at random, so the documents are chosen here, in the rows lighteval reads
SAMPLES_ENV = "QAHUB_LIGHTEVAL_SAMPLES"
FEWSHOT_SEED = 1234  # lm-eval's default fewshot_random_seed
SPLIT = "test"  # the split name of the index folder (a name datasets infers from the file name)
_LOADED = {}  # {task: Loaded}; kept here, not on the config, which lighteval deep-copies


class LightevalTaskError(planning.HarnessError):
    pass


def locations(value: str | None = None) -> dict:
    """``{corpus: location}`` from ``QAHUB_LIGHTEVAL_DATA`` (``CORPUS=LOCATION,...``)."""
    value = os.environ.get(ENV, "") if value is None else value
    if not value.strip():
        raise LightevalTaskError(f"{ENV} is not set: set it to CORPUS=LOCATION[,CORPUS=LOCATION...] (an export "
                                 f"folder or a Hub dataset id; corpora: {', '.join(tasks.corpora())})")
    found = {}
    for item in value.split(","):
        corpus, sep, location = (part.strip() for part in item.partition("="))
        if not sep or not corpus or not location:
            raise LightevalTaskError(f"{ENV}: {item.strip()!r} is not CORPUS=LOCATION")
        if corpus in tasks.clashes():
            raise LightevalTaskError(f"{ENV}: {tasks.clashes()[corpus]}")
        if corpus not in tasks.corpora():
            raise LightevalTaskError(f"{ENV}: unknown corpus {corpus!r}; tasks exist for: "
                                     f"{', '.join(tasks.corpora())}")
        found[corpus] = location
    return found


def declaration(corpus: str, name: str) -> dict:
    """What lighteval needs of the task's declaration (the one place here that reads it)."""
    spec = planning.task_api(corpus).TASKS[name]
    judged = bool(spec.judge) and bool(spec.judge_configured and spec.judge_configured())
    return {"spec": spec, "judge": judged, "metrics": planning.task_metrics(spec, judged), "until": list(spec.until),
            "max_gen_toks": spec.max_gen_toks}


class Loaded:
    """One task's plan, documents and few-shot pool at one location; its prompts for each number of shots."""

    def __init__(self, corpus: str, name: str, location: str):
        self.corpus, self.name = corpus, name
        self.declared = declaration(corpus, name)
        self.entry = planning.plan_tasks(corpus, location)[name]
        self.functions = planning.task_functions(corpus, name, self.entry["location"], judge=self.declared["judge"],
                                                config=self.entry["config"],
                                                splits=(self.entry["split"], self.entry["fewshot_split"]))
        read = self.functions.dataset()
        spec = self.declared["spec"]
        self.docs = planning.task_docs(spec, self.functions, read[self.entry["split"]])
        planning.refuse_closed(spec, self.docs, self.entry)
        self.shots = planning.task_docs(spec, self.functions, read[self.entry["fewshot_split"]])
        self._samples = {}
        # lighteval's results keep no task metadata: each details row carries it (doc.specific)
        self.signature = self.functions.signature(harness_version=_version("lighteval"))

    def samples(self, fewshot: int) -> list:
        """The ``planning.Prompt``s (id, input: the lm-eval context, target) with ``fewshot`` demonstrations, as
        every harness makes them, so one seed gives the same prompts in the three harnesses."""
        if fewshot not in self._samples:
            same_split = self.entry["fewshot_split"] == self.entry["split"]
            self._samples[fewshot] = planning.prompts(self.declared["spec"], self.docs, self.shots, fewshot,
                                                      random.Random(FEWSHOT_SEED), same_split)
        return self._samples[fewshot]


def make_doc(config, line: dict, task_name: str):
    """lighteval's prompt function: the Doc of index row ``line``. ``config`` is the task's config as lighteval
    runs it (a ``functools.partial`` argument is deep-copied with it, so ``num_fewshots`` is the ``|N`` asked
    for); the few-shot pool lighteval reads from the same rows gets no docs (None), so it adds no demonstrations."""
    from lighteval.tasks.requests import Doc

    if line.get("__few_shots"):
        return None
    loaded = _LOADED[task_name]
    index = line["qahub_index"]
    sample = loaded.samples(config.num_fewshots)[index]
    entry = loaded.entry
    return Doc(query=sample.input, choices=[sample.target], gold_index=0, task_name=task_name,
               specific={"qahub_id": sample.id, "qahub_doc": loaded.docs[index], "qahub_doc_id": index,
                         "qahub_doc_hash": doc_hash(loaded.docs[index]),
                         "qahub_dataset": [entry["location"], entry["config"], entry["split"]],
                         "qahub_signature": loaded.signature})


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def doc_hash(doc) -> str:
    """lm-eval's ``doc_hash`` of a logged sample, made with lm-eval's own ``hash_string`` and
    ``handle_non_serializable`` as its evaluator makes it: with the position (lm-eval's ``doc_id``) it pairs a
    lighteval run's documents with an lm-eval run's in ``qahub report``."""
    from lm_eval.utils import handle_non_serializable, hash_string

    return hash_string(json.dumps(doc, indent=2, default=handle_non_serializable, ensure_ascii=False))


def _computations():
    """lighteval's sample-level computations of a qahub task (classes made when lighteval is imported)."""
    from lighteval.metrics.metrics_sample import SampleLevelComputation

    class Scores(SampleLevelComputation):
        """The per-document values ``names`` of one task: the lm-eval task's ``process_results`` on the reply."""

        def __init__(self, task_name: str, names: list):
            self.task_name, self.names = task_name, names

        def compute(self, doc, model_response, **kwargs) -> dict:
            loaded = _LOADED[self.task_name]
            values = loaded.functions.process_results(doc.specific["qahub_doc"],
                                                      [_reply(model_response, loaded.declared["until"])])
            return {name: values[name] for name in self.names}

    class JudgedRun(SampleLevelComputation):
        """One judge metric of every document at once (a batched metric, which lighteval computes before the
        others): the lm-eval task's judge filter grades every reply of the run concurrently, as in lm-eval, and
        ``process_results`` then reads each grade from the judge's cache."""

        def __init__(self, task_name: str, name: str):
            self.task_name, self.name = task_name, name

        def compute(self, responses, docs, **kwargs) -> list:
            loaded = _LOADED[self.task_name]
            functions = loaded.functions
            replies = [_reply(response, loaded.declared["until"]) for response in responses]
            rows = [doc.specific["qahub_doc"] for doc in docs]
            functions.judge_filter([[reply] for reply in replies], rows)
            return [functions.process_results(row, [reply])[self.name]
                    for reply, row in zip(replies, rows, strict=True)]

    return Scores, JudgedRun


def _reply(model_response, until) -> str:
    """The reply cut at the task's stop sequences, as lm-eval cuts it: lighteval 0.13 stops a chat model at its
    end-of-sequence token alone and keeps the task's stop sequences in its reply."""
    return planning.before_stop(model_response.final_text[0] if model_response.final_text else "", until)


class Aggregate:
    """One metric's aggregation over all documents, the lm-eval task's: its ``mean`` or the task's own function,
    finite-checked (``planning.task_functions``). A picklable object, not a closure: lighteval bootstraps the
    stderr of an aggregation whose name is not a mean in worker processes."""

    def __init__(self, corpus: str, name: str, metric: str):
        self.corpus, self.name, self.metric = corpus, name, metric
        how = self._how()
        # lighteval computes the stderr of an aggregation whose name contains "mean" as a plain mean's, over the
        # raw values: only a plain mean (lm-eval's, JEMHopQA's) may be named so; Topical-Chat's knowledge_f1 is
        # ``mean_or_zero`` of values that are None on a turn without knowledge: bootstrapped through this object
        name = how if isinstance(how, str) else getattr(how, "__name__", "aggregate")
        self.__name__ = name if name == "mean" else name.replace("mean", "average")

    def _how(self):
        return declaration(self.corpus, self.name)["metrics"][self.metric][0]

    def __call__(self, values) -> float:
        how = self._how()
        return planning.finite_mean(values) if how == "mean" else planning.finite(how)(values)


def task_metrics(loaded: Loaded) -> list:
    """The task's metrics, each aggregated as the lm-eval task does: one SampleLevelMetricGrouping of the values
    ``process_results`` gives; with a judge set, the first judge metric apart, batched (``JudgedRun``), so that the
    run's replies are judged concurrently rather than one document at a time."""
    from lighteval.metrics.utils.metric_utils import SampleLevelMetric, SampleLevelMetricGrouping
    from lighteval.tasks.requests import SamplingMethod

    Scores, JudgedRun = _computations()
    metrics = loaded.declared["metrics"]
    batched = [next(iter(loaded.declared["spec"].judge_metrics))] if loaded.declared["judge"] else []
    grouped = [m for m in metrics if m not in batched]
    found = [SampleLevelMetricGrouping(
        metric_name=grouped, category=SamplingMethod.GENERATIVE, sample_level_fn=Scores(loaded.name, grouped),
        corpus_level_fn={m: Aggregate(loaded.corpus, loaded.name, m) for m in grouped},
        higher_is_better={m: metrics[m][1] for m in grouped})]
    # lighteval 0.13 indexes a batched metric's values by its name, so a batched grouping cannot work: one metric
    return found + [SampleLevelMetric(
        metric_name=m, category=SamplingMethod.GENERATIVE, sample_level_fn=JudgedRun(loaded.name, m),
        corpus_level_fn=Aggregate(loaded.corpus, loaded.name, m), higher_is_better=metrics[m][1],
        batched_compute=True) for m in batched]


def task_config(loaded: Loaded, rows: str):
    from lighteval.tasks.lighteval_task import LightevalTaskConfig

    config = LightevalTaskConfig(
        name=loaded.name, prompt_function=None, hf_repo=rows, hf_subset=None, metrics=task_metrics(loaded),
        hf_avail_splits=[SPLIT], evaluation_splits=[SPLIT], few_shots_split=SPLIT, few_shots_select="sequential",
        generation_size=loaded.declared["max_gen_toks"], stop_sequence=loaded.declared["until"],
        version=1)
    config.prompt_function = functools.partial(make_doc, config)
    return config


def selected(name: str, count: int, value: str = "") -> list:
    """The document indexes of task ``name`` that ``QAHUB_LIGHTEVAL_SAMPLES`` (``value``) names, in order; every
    document when it names none for the task."""
    if not value.strip():
        return list(range(count))
    try:
        table = json.loads(value)
    except ValueError as err:
        raise LightevalTaskError(f"{SAMPLES_ENV}: not JSON ({err}): give {{\"TASK\": [index, ...]}}, as lm-eval's "
                                 "--samples") from None
    if not isinstance(table, dict):
        raise LightevalTaskError(f"{SAMPLES_ENV}: not a {{\"TASK\": [index, ...]}} object")
    if name not in table:
        return list(range(count))
    indexes = table[name]
    if not (isinstance(indexes, list) and indexes and all(type(i) is int and 0 <= i < count for i in indexes)):
        raise LightevalTaskError(f"{SAMPLES_ENV}: {name}: {indexes!r} is not a list of document indexes "
                                 f"0..{count - 1}")
    return sorted(set(indexes))


def index_rows(name: str, indexes: list) -> str:
    """A folder with ``test.jsonl``: one row ``{"qahub_index": i}`` per document (what lighteval iterates)."""
    key = hashlib.sha256(json.dumps(indexes).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"qahub-lighteval-{os.getuid()}" / name / key
    if not (folder / f"{SPLIT}.jsonl").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        staged = folder / f".{SPLIT}.jsonl.{os.getpid()}"
        staged.write_text("".join(json.dumps({"qahub_index": i}) + "\n" for i in indexes), encoding="utf-8")
        staged.replace(folder / f"{SPLIT}.jsonl")
    return str(folder)


def tasks_table(value: str | None = None) -> list:
    """A LightevalTaskConfig for every task of every corpus in ``QAHUB_LIGHTEVAL_DATA`` (or ``value``)."""
    return list(_tasks_table(os.environ.get(ENV, "") if value is None else value, os.environ.get(SAMPLES_ENV, "")))


@functools.lru_cache(maxsize=None)  # lighteval asks hasattr, then getattr: one read of the data
def _tasks_table(value: str, samples: str = "") -> tuple:
    try:
        import lighteval  # noqa: F401
    except ImportError:
        raise LightevalTaskError("lighteval is not installed: pip install -e '.[lighteval]' in the qahub clone") from None
    table = []
    for corpus, location in locations(value).items():
        for name in planning.task_api(corpus).TASKS:
            loaded = _LOADED[name] = Loaded(corpus, name, location)
            table.append(task_config(loaded, index_rows(name, selected(name, len(loaded.docs), samples))))
    return tuple(table)


@contextlib.contextmanager
def custom_tasks_only():
    """lighteval's ``Registry`` holding the ``--custom-tasks`` alone. lighteval 0.13 imports every task module it
    ships before the custom ones, and two of them stop it: ``tiny_benchmarks`` downloads a file at import (offline:
    an error), ``mt_bench`` calls ``HfApi.list_models(model_name=...)``, which huggingface_hub 1.x no longer
    takes (a TypeError with the huggingface_hub that datasets 5 and transformers 5 need)."""
    from lighteval.tasks.registry import Registry

    original = Registry.__dict__["load_all_task_configs"]

    def load(custom_tasks=None, load_multilingual=False):
        if custom_tasks is None:
            return {}
        return Registry._extract_configs(Registry.create_custom_tasks_module(custom_tasks))

    Registry.load_all_task_configs = staticmethod(load)
    try:
        yield
    finally:
        Registry.load_all_task_configs = original


def main(argv=None):
    """``python -m qahub.lighteval_tasks accelerate|vllm|endpoint ... --custom-tasks qahub.lighteval_tasks``:
    lighteval's own command line, its registry holding the custom tasks alone (``custom_tasks_only``)."""
    from lighteval.__main__ import app

    with custom_tasks_only():
        app(args=argv, prog_name="python -m qahub.lighteval_tasks")


def __getattr__(name):
    if name == "TASKS_TABLE":  # built when lighteval reads it, from the environment of that moment
        return tasks_table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
