"""lm-evaluation-harness task of LIMUR, as MERA runs it (``benchmark_tasks/limur`` in MERA-Evaluation/MERA,
commit 62309eb): MERA's prompt, target and few-shot split, scored by the same code as the ``limur`` metric."""

import functools
import logging
import os

from .judge import Endpoint, JudgeConfigError, check_prompt, grade_parser
from .mera import answer_candidates, best_score
from .score import score_reply

OPTION_KEYS = [f"option_{c}" for c in "abcdefghi"]
JUDGE_ENV = ("QAHUB_JUDGE_URL", "QAHUB_JUDGE_MODEL", "QAHUB_JUDGE_API_KEY", "QAHUB_JUDGE_PROMPT")
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


@functools.lru_cache(maxsize=4)
def _endpoint(url, model, api_key, prompt_name, timeout, retries):
    return Endpoint(url, model, api_key=api_key, prompt=prompt_name, timeout=timeout, retries=retries)


def configured_judge():
    """The endpoint judge set by QAHUB_JUDGE_URL / _MODEL / _API_KEY / _PROMPT (mera, the default, or seed),
    and optionally QAHUB_JUDGE_TIMEOUT (60 s) and QAHUB_JUDGE_RETRIES (3); None when QAHUB_JUDGE_URL or
    QAHUB_JUDGE_MODEL is unset."""
    url, model, key, prompt_name = (os.environ.get(name) for name in JUDGE_ENV)
    if not url or not model:
        return None
    timeout = _env_number("QAHUB_JUDGE_TIMEOUT", 60.0, float)
    retries = _env_number("QAHUB_JUDGE_RETRIES", 3, int)
    return _endpoint(url, model, key or None, check_prompt(prompt_name or "mera"), timeout, retries)


def _env_number(name, default, kind):
    try:
        value = kind(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value >= 0 else default


def judge_score(reply, doc):
    """The judge's score of one reply in [0, 1]; 0.0 when no judge is configured, the answer is closed, or the
    judge fails or replies no grade (as MERA's ``compute_judge_score``). The ``mera`` prompt scores the best
    of the answer candidates, as MERA does; the ``seed`` prompt judges the whole reply."""
    try:
        judge = configured_judge()
    except (JudgeConfigError, ValueError) as err:  # e.g. QAHUB_JUDGE_TIMEOUT=0
        logger.warning("limur judge not usable, scoring 0.0: %s", err)
        return 0.0
    gold = doc.get("outputs") or ""
    if judge is None or not gold.strip():
        return 0.0
    reply = reply if isinstance(reply, str) else ""
    parse = grade_parser(judge.prompt)
    task = _task_text(doc)
    if judge.prompt == "mera":
        return best_score(lambda c: _ask(judge, parse, task, gold, c), answer_candidates(reply))
    letter = gold.strip()
    reference = f"{letter}. {doc['inputs'][OPTION_KEYS[LETTERS.index(letter)]]}" if letter in LETTERS else gold
    return _ask(judge, parse, task, reference, reply)


def judge(reply, doc):
    """``{"judge_score": ...}``: ``judge_score`` as a per-example values dict, like ``score``."""
    return {"judge_score": judge_score(reply, doc)}


def _task_text(doc):
    try:
        return prompt(doc)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return doc.get("instruction") or ""


def _ask(judge, parse, task, reference, answer):
    try:
        grade = parse(judge(task, reference, answer))
    except Exception as err:  # noqa: BLE001 - as MERA: a failed judgement scores 0.0, the run goes on
        logger.warning("limur judge failed, scoring 0.0: %s", judge.mask(f"{type(err).__name__}: {err}"))
        return 0.0
    return 0.0 if grade is None else grade


TASKS = {
    "qahub_limur": {
        "configs": ["all"],
        "splits": ["test", "validation"],
        "fewshot_split": "shots",
        "usable": usable,
        "docs": None,
        "prompt": prompt,
        "target": target,
        # MERA's limur.yaml sets no generation_kwargs: lm-eval then stops at the few-shot delimiter "\n\n" and
        # generates at most 256 tokens; the one-letter target holds no stop sequence
        "until": ["\n\n"],
        "max_gen_toks": 256,
        "score": score,
        "metrics": {"exact_match": ("mean", True), "exact_match_mera": ("mean", True),
                    "unparseable": ("mean", False)},
        # add to "metrics" when a judge is configured (QAHUB_JUDGE_URL and QAHUB_JUDGE_MODEL set)
        "judge_metrics": {"judge_score": ("mean", True)},
        "judge_score": judge_score,
        "judge": judge,
        # breakdowns `qahub report` shows: FIELD -> the category of a logged doc
        "categories": {"task_type": task_type, "context_type": context_type},
    },
}
