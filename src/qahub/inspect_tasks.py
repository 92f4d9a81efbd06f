"""inspect-ai tasks: one ``qahub/<name>`` task for each lm-eval task ``qahub_<name>``, derived from the same
declaration (the ``TaskSpec`` in the ``TASKS`` table of the corpus's metric ``task_api``) and the same documents.

``inspect eval qahub/limur -T dataset=LOCATION [-T config=C -T split=S -T fewshot=N] --model ...``: LOCATION is
an export folder or a Hub dataset id, resolved as ``qahub harness-tasks`` resolves it (``planning.plan_tasks``)
and read fresh from its files (``planning.task_functions``). A sample's input is the lm-eval context as plain
text (its few-shot demonstrations drawn from the task's few-shot split by ``planning.Demonstrations``, as the
lm-eval task draws them: never the document itself, nor a turn of its conversation), its target the task's
target, its id the document's id; the generation stops at the task's stop sequences within its token limit,
greedily (``greedy_generate``). The scorer gives every per-document value of the task; each metric aggregates
over all documents as the lm-eval task does (corpus BLEU over every pair), and
is broken down by each declared category (the samples' metadata) with inspect's ``grouped()``. A task declaring
a ``grader`` (LIMUR) is also judged by inspect's grader role (``--model-role grader=...``) when one is given.
"""

from __future__ import annotations

import logging
import random

from inspect_ai import Task, task
from inspect_ai._util.error import PrerequisiteError  # private (see below)
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, Model, get_model, model_roles
from inspect_ai.model._generate_config import active_generate_config  # private (see below)
from inspect_ai.scorer import SampleScore, Score, grouped, metric, scorer
from inspect_ai.solver import solver

from qahub import inspect_models, planning, tasks
from qahub.tasks import Grader, TaskSpec

# Two private names, for want of public ones in inspect-ai 0.3.285: PrerequisiteError is what inspect's command
# line prints as one line instead of a traceback (TaskInputError), and active_generate_config is the generation
# config a run was given (greedy_generate). tests/test_inspect_tasks.py runs both through inspect's own CLI.
PREFIX = "qahub_"  # lm-eval's task qahub_limur is inspect's qahub/limur
FEWSHOT_SEED = 1234  # lm-eval's default fewshot_random_seed
GRADER = "grader"  # inspect's model role the judge runs on
logger = logging.getLogger(__name__)
CARRIED = "qahub_values"  # a Score's metadata key: the per-document values that are not numbers
CLUSTER = "qahub_cluster"  # a Sample's metadata key: the document's declared cluster (TaskSpec.cluster)


class TaskInputError(PrerequisiteError, planning.HarnessError):
    """A task parameter or the export it names cannot be used: inspect's command line prints the one line."""

    def __init__(self, message: str):
        Exception.__init__(self, message)
        self.message = message


def task_names() -> dict:
    """``{inspect task name: (corpus, lm-eval task name)}`` of every declared task, read from the task_api files
    without importing them (``qahub.tasks.declared_tasks``): a task's corpus is imported when the task is built,
    and a task_api that does not import is said then, in one line."""
    return {name.removeprefix(PREFIX): (corpus, name) for name, corpus in tasks.declared_tasks().items()}


def build_task(corpus: str, name: str, dataset: str, config: str | None = None, split: str | None = None,
               fewshot: int = 0, fewshot_seed: int = FEWSHOT_SEED) -> Task:
    """The inspect Task of lm-eval task ``name`` of ``corpus`` on the export or Hub dataset ``dataset``."""
    spec = planning.task_api(corpus).TASKS[name]
    entry = planning.task_entry(corpus, name, dataset, config, split)
    functions = planning.task_functions(corpus, name, entry["location"], config=entry["config"],
                                       splits=(entry["split"], entry["fewshot_split"]))
    read = functions.dataset()
    docs = planning.task_docs(spec, functions, read[entry["split"]])
    planning.refuse_closed(spec, docs, entry)
    shots = planning.task_docs(spec, functions, read[entry["fewshot_split"]]) if fewshot else []
    samples, by_id = task_samples(spec, docs, shots, fewshot, random.Random(fewshot_seed),
                              entry["fewshot_split"] == entry["split"])
    where = f"{entry['location']} config {entry['config']} split {entry['split']}"
    return Task(
        dataset=MemoryDataset(samples, name=f"{name}: {where}", location=entry["location"]),
        solver=greedy_generate(spec.until),
        scorer=task_scorer(name, spec, by_id, functions.aggregate),
        config=GenerateConfig(stop_seqs=list(spec.until), max_tokens=spec.max_gen_toks,
                              temperature=0.0),
        # signature: the fields known now (qahub.signature.LOGGED); inspect's log keeps its own version
        metadata={"qahub": {**entry, "lm_eval_task": name, "fewshot": fewshot, "judge": _judge_record(spec),
                            "signature": functions.signature()}},
    )


def task_samples(spec: TaskSpec, docs: list, shots: list, fewshot: int, rnd: random.Random, same_split: bool):
    """The Samples, in document order (``planning.prompts``), and ``{sample id: document}``."""
    made = planning.prompts(spec, docs, shots, fewshot, rnd, same_split)
    samples = [Sample(id=p.id, input=p.input, target=p.target, metadata=sample_metadata(spec, p.doc)) for p in made]
    inspect_models.remember(samples)  # what --model qahub/oracle replies
    return samples, {p.id: p.doc for p in made}


def sample_metadata(spec: TaskSpec, doc: dict) -> dict:
    """The document's declared categories, and its cluster: what `qahub report` breaks down and resamples by."""
    metadata = {field: category(doc) for field, category in spec.categories.items()}
    if spec.cluster:
        metadata[CLUSTER] = spec.cluster(doc)
    return metadata


def task_scorer(name: str, spec: TaskSpec, docs: dict, aggregate: dict):
    """One scorer giving every per-document value of the task (a dict Score value); the judge's values too when
    the task declares a grader and the eval binds the grader role."""
    # with a grader, the judge's metrics too: left out of the results when no sample holds them (no grader bound)
    declared = planning.task_metrics(spec, judge=bool(spec.grader))
    metrics = {key: _metrics(key, how, spec, aggregate) for key, (how, _) in declared.items()}

    @scorer(metrics=metrics, name=name)
    def qahub_scores():
        async def score(state, target):
            doc = docs[state.sample_id]
            reply = state.output.completion
            values = spec.score(reply, doc)
            grader = model_roles().get(GRADER) and get_model(role=GRADER)
            judged = spec.grader and grader
            if judged:
                values.update(await _judge(spec.grader, grader, reply, doc))
            values = {key: values[key] for key in declared if key in values}
            carried = {key: value for key, value in values.items() if not _number(value)}
            # every reducer inspect offers (--epochs-reducer) reduces numbers: what is not one (a corpus BLEU
            # pair, a distinct-n text, a None) goes in the metadata, which reducers keep from the first epoch
            metadata = {CARRIED: carried} if carried else {}
            if judged:  # which judge gave this judge_score (the task's metadata too, when the role was bound)
                metadata["judge"] = spec.grader.record(grader)
            return Score(value={key: 0 if key in carried else value for key, value in values.items()},
                         metadata=metadata or None)

        return score

    return qahub_scores()


def _metrics(key: str, how, spec: TaskSpec, aggregate: dict) -> list:
    """The aggregate of ``key`` over all documents, then one breakdown per declared category."""
    whole = _aggregate(key, how, aggregate.get(key))
    return [whole] + [_breakdown(whole, field) for field in spec.categories]


def _breakdown(whole, field: str):
    """``grouped(whole, field)`` under the name ``field`` (inspect keeps one metric of a name per score, so two
    ``grouped`` would be one)."""
    by_group = grouped(whole, field, all=False)

    @metric(name=field)
    def breakdown():
        def compute(scores: list[SampleScore]):
            return by_group(scores)

        return compute

    return breakdown()


def _aggregate(key: str, how, checked):
    """An inspect metric aggregating the per-document values of ``key`` as the lm-eval task does: lm-eval's
    ``mean``, or the task's own aggregation (``checked``: planning.task_functions' finite-checked one)."""
    if how == "mean":
        checked = planning.finite_mean
    elif isinstance(how, str):
        raise ValueError(f"metric {key}: aggregation {how!r} has no inspect counterpart here")
    label = how if isinstance(how, str) else getattr(how, "__name__", "aggregate")

    @metric(name=label)
    def aggregation():
        def compute(scores: list[SampleScore]) -> float:
            if not scores:  # what inspect shows before the first sample is scored: no value yet, not an error
                return float("nan")
            return checked([_value(key, getattr(item, "score", item)) for item in scores])

        return compute

    return aggregation()


def _value(key: str, score: Score):
    """One per-document value of ``key`` (``score.value`` is that value alone, as inspect hands it to a metric)."""
    carried = (score.metadata or {}).get(CARRIED, {})
    return carried[key] if key in carried else score.value


def document_values(score: Score) -> dict:
    """Every per-document value of a sample's Score (as the lm-eval task's process_results gives them)."""
    return {**score.value, **(score.metadata or {}).get(CARRIED, {})}


def _number(value) -> bool:
    return isinstance(value, int | float)


def _judge_record(spec: TaskSpec):
    """Which judge grades this eval (the task's record of the grader role's model), None without one."""
    grader = model_roles().get(GRADER)  # bound by `inspect eval --model-role` before the task is made
    return spec.grader.record(grader) if spec.grader and isinstance(grader, Model) else None


async def _judge(grader_spec: Grader, grader, reply, doc) -> dict:
    """The task's judge values for one reply: each of its prompts sent to the grader model as one user message at
    temperature 0, each reply read by the task's ``grade``; a failed call is no grade (scored as the task says)."""
    config = GenerateConfig(temperature=0.0, max_tokens=grader_spec.max_tokens)
    grades = []
    for prompt in grader_spec.prompts(reply, doc):
        try:
            output = await grader.generate(prompt, config=config)
        except Exception as err:  # as MERA: a failed judgement counts as no grade, the run goes on
            logger.warning("grader failed, no grade: %s: %s", type(err).__name__, err)
            grades.append(None)
            continue
        grades.append(grader_spec.grade(output.completion))
    return grader_spec.reduce(grades)


@solver
def greedy_generate(until=()):
    """inspect's ``generate`` at the task's settings (temperature 0: greedy, as lm-eval). inspect's ``hf/``
    provider samples (``do_sample``) unless given ``-M do_sample=false`` and then refuses temperature 0; there
    greedy is sampling from the top token alone (``top_k=1``), at a temperature it accepts. The completion is
    cut at the task's stop sequences as lm-eval cuts it (``planning.before_stop``): the ``hf/`` provider stops
    at one but keeps it, and what followed it in its last token (a base model's next «\n質問»)."""

    async def solve(state, generate):
        if state.model.api == "hf" and active_generate_config().temperature == 0:
            state = await generate(state, temperature=1.0, top_k=1)
        else:
            state = await generate(state)
        if state.output and state.output.completion:
            state.output.completion = planning.before_stop(state.output.completion, until)
        return state

    return solve


def _register(short: str, corpus: str, name: str):
    def run(dataset: str | None = None, config: str | None = None, split: str | None = None, fewshot: int = 0,
            fewshot_seed: int = FEWSHOT_SEED) -> Task:
        try:
            check_parameters(dataset=dataset, config=config, split=split, fewshot=fewshot, fewshot_seed=fewshot_seed)
            return build_task(corpus, name, dataset, config, split, fewshot, fewshot_seed)
        except planning.HarnessError as err:
            raise TaskInputError(f"qahub/{short}: {err}") from None

    run.__name__ = short
    run.__doc__ = f"lm-eval's {name} as an inspect task (qahub.inspect_tasks); dataset: export folder or Hub id."
    return task(name=short)(run)


def check_parameters(dataset, config, split, fewshot, fewshot_seed):
    """The task parameters (``-T NAME=VALUE``, which inspect reads as YAML: ``1.5`` a number, ``[1]`` a list)."""
    if dataset is None:
        raise planning.HarnessError("-T dataset=LOCATION is required: an export folder or a Hub dataset id")
    for key, value in (("dataset", dataset), ("config", config), ("split", split)):
        if value is not None and not isinstance(value, str):
            raise planning.HarnessError(f"-T {key}={value!r}: must be text, not a {type(value).__name__} "
                                       f"(inspect reads -T values as YAML); quote it: -T {key}='\"{value}\"'")
        if value is not None and not value.strip():
            raise planning.HarnessError(f"-T {key}={value!r}: is empty")
    if isinstance(fewshot, bool) or not isinstance(fewshot, int) or fewshot < 0:
        raise planning.HarnessError(f"-T fewshot={fewshot!r}: must be a whole number of demonstrations, 0 or more")
    if isinstance(fewshot_seed, bool) or not isinstance(fewshot_seed, int):
        raise planning.HarnessError(f"-T fewshot_seed={fewshot_seed!r}: must be a whole number")


TASKS = {short: _register(short, corpus, name) for short, (corpus, name) in task_names().items()}
