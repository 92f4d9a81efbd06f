"""lm-evaluation-harness task of LIMUR, as MERA runs it (``benchmark_tasks/limur`` in MERA-Evaluation/MERA,
commit 62309eb): MERA's prompt, target and few-shot split, scored by the same code as the ``limur`` metric."""

import functools
import logging
import os
from types import SimpleNamespace

from .judge import (
    MERA_MAX_TOKENS,
    PROMPT_IDS,
    Endpoint,
    JudgeConfigError,
    cache_key,
    check_prompt,
    grade_parser,
    judge_all,
    mera_prompt,
    parse_mera_grade,
    public_url,
)
from .judge_settings import MixedJudgeError, resolve
from .mera import answer_candidates
from .score import score_reply
from .task_spec import Grader, TaskSpec

OPTION_KEYS = [f"option_{c}" for c in "abcdefghi"]
LETTERS = "АБВГДЕЁЖЗ"
logger = logging.getLogger(__name__)


def usable(doc):
    """Whether the doc has gold: MERA's test split keeps its answers closed (``outputs`` "")."""
    return bool((doc.get("outputs") or "").strip())


def prompt(doc):
    """MERA's ``doc_to_text``: the instruction filled with the inputs (it asks for «Ответ: <буква>»)."""
    return doc["instruction"].format(**doc["inputs"])


def target(doc):
    """MERA's ``doc_to_target``: the gold letter."""
    return doc["outputs"].strip()


def task_type(doc):
    return doc["meta"]["task_type"]


def context_type(doc):
    return doc["meta"]["context_type"]


def doc_id(doc):
    return doc["meta"]["id"]


def n_options(doc):
    options = doc.get("options")
    if options is None:
        options = [v for v in (doc["inputs"].get(key) or "" for key in OPTION_KEYS) if v.strip()]
    return len(options)


def score(reply, doc):
    """Per-example ``exact_match`` (the seed's strict reading), ``exact_match_mera`` and ``unparseable``."""
    row = score_reply(reply, doc.get("outputs") or "", n_options(doc))
    return {"exact_match": row["strict"], "exact_match_mera": row["mera"],
            "unparseable": int(row["strict_letter"] is None)}


MERA_TEMPLATE = "LM_EVAL_JUDGE_PROMPT"  # replaces MERA's prompt, as in MERA
# where this task's judge differs from the metric's defaults: MERA's prompt, and a run's replies 8 at a time
TASK_DEFAULTS = {"prompt": "mera", "concurrency": 8}
# the judge's replies and failures in this process, by cache key: the parallel filter fills them for a whole
# run, process_results reads them (and asks, one at a time, only what the filter did not)
JUDGED = {}
FAILED = {}


@functools.lru_cache(maxsize=4)
def _endpoint(url, model, api_key, prompt_name, template, timeout, retries, backoff):
    return Endpoint(url, model, api_key=api_key, prompt=prompt_name, template=template, timeout=timeout,
                    retries=retries, backoff=backoff)


def judge_settings():
    """Every judge setting (``judge_settings.SETTINGS``) and ``template``, or None when no judge is configured.

    ``judge_settings.resolve`` with MERA's variables last: each QAHUB_JUDGE_<NAME> wins; where the URL and model
    are unset, MERA's LM_EVAL_JUDGE_API_BASE (+ ``/v1/chat/completions``, as compute_llm_judge posts) and
    LM_EVAL_JUDGE_MODEL, with the key OPENAI_API_KEY or LM_EVAL_JUDGE_API_KEY sent only to MERA's address; then
    TASK_DEFAULTS, then the declared defaults. A URL and a model from two places, or a bad value, is a
    ValueError naming them. LM_EVAL_JUDGE_PROMPT replaces MERA's prompt template, as in MERA."""
    settings = resolve(fallback=TASK_DEFAULTS, mera=True)
    if not settings["url"] or not settings["model"]:
        return None
    return {**settings, "template": os.environ.get(MERA_TEMPLATE) or None}


def configured_judge():
    """The endpoint judge of ``judge_settings()``; None when none is configured."""
    settings = judge_settings()
    if settings is None:
        return None
    return _endpoint(settings["url"], settings["model"], settings["api_key"] or None,
                     check_prompt(settings["prompt"]), settings["template"], settings["timeout"],
                     settings["retries"], settings["backoff"])


def judge_record():
    """Which judge an lm-eval run uses (``Endpoint.record``: URL without credentials, model, prompt, max tokens),
    None without one, ``{"error": ...}`` when it cannot work (every judge_score 0.0). The generated task's
    metadata holds it (read when lm-eval loads the task, from the variables the judge then reads), so the
    results file says which judge gave its judge_score. A URL and a model from two places raise here, before
    any generation."""
    try:
        judge = configured_judge()
    except MixedJudgeError:
        raise
    except (JudgeConfigError, ValueError) as err:
        return {"error": str(err)}
    return None if judge is None else judge.record


def grader_record(model):
    """Which judge an inspect run uses: its grader role's model and base URL (without credentials), MERA's
    prompt and max tokens."""
    base = getattr(getattr(model, "api", None), "base_url", None)
    return {"url": public_url(base) if base else None, "model": str(model), "prompt": "mera",
            "prompt_id": PROMPT_IDS["mera"], "max_tokens": MERA_MAX_TOKENS}


def _usable_judge():
    try:
        return configured_judge()
    except (JudgeConfigError, ValueError) as err:  # e.g. QAHUB_JUDGE_TIMEOUT=0
        logger.warning("limur judge not usable, scoring 0.0: %s", err)
        return None


def judge_items(judge, reply, doc):
    """The judgements one reply needs: none for a closed answer; ``mera`` judges each of MERA's answer
    candidates against ``outputs`` (and keeps the best), ``seed`` the whole reply against «letter. option»."""
    gold = doc.get("outputs") or ""
    if not gold.strip():
        return []
    reply = reply if isinstance(reply, str) else ""
    task = _task_text(doc)
    if judge.prompt == "mera":
        return [(task, gold, candidate) for candidate in answer_candidates(reply)]
    letter = gold.strip()
    reference = f"{letter}. {doc['inputs'][OPTION_KEYS[LETTERS.index(letter)]]}" if letter in LETTERS else gold
    return [(task, reference, reply)]


def judge(reply, doc):
    """``{"judge_score", "judge_coverage"}`` of one reply: the judge's score in [0, 1] (the best over the
    judgements, 0.0 when none is configured, the answer is closed, or the judge fails or replies no grade, as
    MERA's ``compute_judge_score``), and 1 when a grade was read, else 0. Replies the parallel filter judged are
    not asked again."""
    endpoint = _usable_judge()
    items = judge_items(endpoint, reply, doc) if endpoint is not None else []
    if not items:
        return {"judge_score": 0.0, "judge_coverage": 0}
    try:
        scores, _ = judge_all(items, endpoint, endpoint.identity, concurrency=1, cache=JUDGED,
                              parse=grade_parser(endpoint.prompt), failed=FAILED)
    except JudgeConfigError as err:  # as MERA: a failed judgement scores 0.0, the run goes on
        logger.warning("limur judge failed, scoring 0.0: %s", err)
        return {"judge_score": 0.0, "judge_coverage": 0}
    return best_grade(scores)


def best_grade(grades):
    """``{"judge_score", "judge_coverage"}`` of one reply's judgements (a grade in [0, 1], or None when none was
    read): the best grade, 0.0 without one, as MERA's ``best_score``; coverage 1 when a grade was read."""
    graded = [grade for grade in grades if grade is not None]
    return {"judge_score": max(graded, default=0.0), "judge_coverage": int(bool(graded))}


_MERA = SimpleNamespace(prompt="mera")


def mera_judge_prompts(reply, doc):
    """MERA's judge prompt, one user message, for each of MERA's answer candidates of ``reply``; none for a
    closed answer (what a harness's own grader model is asked, e.g. inspect's grader role)."""
    return [mera_prompt(*item) for item in judge_items(_MERA, reply, doc)]


def judge_score(reply, doc):
    """The judge's score of one reply in [0, 1] (see ``judge``)."""
    return judge(reply, doc)["judge_score"]


def judge_filter(resps, docs):
    """An lm-eval ``custom`` filter: judges every reply of the run at once, QAHUB_JUDGE_CONCURRENCY (else 8) at a
    time, before lm-eval calls process_results one document at a time; the replies pass on unchanged."""
    endpoint = _usable_judge()
    if endpoint is None:
        return resps
    items = [item for resp, doc in zip(resps, docs, strict=True) for item in judge_items(endpoint, _first(resp), doc)]
    concurrency = judge_settings()["concurrency"]
    try:
        judge_all(items, endpoint, endpoint.identity, concurrency=concurrency, cache=JUDGED,
                  parse=grade_parser(endpoint.prompt), failed=FAILED)
    except JudgeConfigError as err:  # the judge cannot work: every document not yet judged scores 0
        logger.warning("limur judge failed, scoring 0.0: %s", err)
        for item in items:
            key = cache_key(endpoint.identity, *item)
            if key not in JUDGED:
                FAILED[key] = str(err)
    return resps


def _first(resp):
    return resp[0] if isinstance(resp, (list, tuple)) and resp else resp


def judge_configured():
    try:
        return judge_settings() is not None
    except ValueError:  # set, wrongly: the judge says so when it is used
        return True


def _task_text(doc):
    try:
        return prompt(doc)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return doc.get("instruction") or ""


def configuration():
    """The scorer's settings (the task's signature): the seed's strict letter reading and MERA's exact_match
    (MERA-Evaluation/MERA at 62309eb); the judge, when there is one, is the signature's own field."""
    return {"exact_match": "strict-letter", "exact_match_mera": "mera-62309eb"}


# the corpus these tasks run on (qahub.harness finds the tasks of every corpus by it)
CORPUS = "limur"

TASKS = {
    "qahub_limur": TaskSpec(
        configs=["all"],
        splits=["test", "validation"],
        fewshot_split="shots",
        usable=usable,
        prompt=prompt,
        target=target,
        # MERA's limur.yaml sets no generation_kwargs: lm-eval then stops at the few-shot delimiter "\n\n" and
        # generates at most 256 tokens (the default max_gen_toks); the one-letter target holds no stop sequence
        until=["\n\n"],
        score=score,
        metrics={"exact_match": ("mean", True), "exact_match_mera": ("mean", True),
                 "unparseable": ("mean", False)},
        oracle={"exact_match": 1.0, "exact_match_mera": 1.0, "unparseable": 0.0},
        binary=["exact_match", "exact_match_mera", "unparseable"],
        # added to the metrics when a judge is configured (QAHUB_JUDGE_URL and QAHUB_JUDGE_MODEL set, or MERA's
        # LM_EVAL_JUDGE_API_BASE and LM_EVAL_JUDGE_MODEL); judge_coverage: the share of documents judged
        judge_metrics={"judge_score": ("mean", True), "judge_coverage": ("mean", True)},
        judge=judge,
        judge_filter=judge_filter,  # judges a whole run concurrently before process_results
        judge_configured=judge_configured,
        judge_record=judge_record,  # the lm-eval task's metadata records it
        # a harness's own grader model (inspect's grader role): MERA's prompts, at temperature 0 with this many
        # tokens, MERA's reading of each reply, the best grade kept
        grader=Grader(prompts=mera_judge_prompts, max_tokens=MERA_MAX_TOKENS, grade=parse_mera_grade,
                      reduce=best_grade, record=grader_record),
        doc_id=doc_id,  # the document's id: MERA's meta.id, unique within a split
        categories={"task_type": task_type, "context_type": context_type},
        configuration=configuration,  # how each reply is read
    ),
}


# --- training rows (qahub.training, issue 38): each task's non-template text of a doc, which decontamination
# compares with the evaluated docs': (doc -> its question or turns, whether it is a dialogue turn, whose question is
# then the conversation with the reply); the reply is the task's target
TRAINING_TEXTS = {"qahub_limur": (lambda doc: [str(v) for v in doc["inputs"].values() if v], False)}
