"""lm-evaluation-harness task for Russian QA Jeopardy! ("Своя игра"): question -> short answer in Russian.

The generated lm-eval ``utils.py`` imports this module as ``qahub.metrics.jeopardy_meteor.task_api``; the
`evaluate` metric scores each reply with the same ``score_example`` (``examples.py``).

Per example: ``meteor`` (official order, 0 for an abstention), ``accuracy`` (1 when METEOR > 0.227743),
``game_score`` (+value when correct, -value when wrong, 0 on abstention; the value is the row's
``question_number``, or 1 for a ``qa`` row, which has none), ``abstained`` and ``unparseable`` (0/1).
``game_score`` is aggregated as a sum (the game's total, as the official notebook prints it); the others as
means.
"""

import re

from .examples import score_example
from .replies import parse_reply
from .russian_meteor import THRESHOLD, shared
from .task_spec import TaskSpec

TOKENIZER = "auto"  # spaCy's Russian tokenizer when installed, else the regex imitation: see resources()
UNIT_VALUE = 1  # the value of a question whose row has no question_number (config `qa`)

_INSTRUCTION = (
    "Ответьте на вопрос викторины «Своя игра» одной строкой в формате «Ответ: <краткий ответ>»: только сам "
    "ответ (слово, имя, название или число), без пояснений. За верный ответ стоимость вопроса прибавляется "
    "к счёту, за неверный вычитается. Если не знаете ответа, напишите «Ответ: Пас»: счёт не изменится."
)


def prompt(doc):
    """The instruction, topic and value when the row has them, the question, and «Ответ:» to continue."""
    lines = [_INSTRUCTION]
    if doc.get("topic"):
        lines.append(f"Тема: {_one_line(doc['topic'])}")
    if doc.get("question_number") is not None:
        lines.append(f"Стоимость вопроса: {doc['question_number']}")
    lines.append(f"Вопрос: {_one_line(doc['question'])}")
    lines.append("Ответ:")
    return "\n".join(lines)


def target(doc):
    """The gold answer as the prompt asks for it: the text after «Ответ:», on one line (lm-eval puts a space
    between the prompt and the target), without its annotations (``clean_answer``), so that few-shot
    demonstrations show a short answer. The row keeps the annotated answer, which is what replies are scored on."""
    return clean_answer(str(doc["answer"]))


# an accepted variant «{зачет: ...}» or a part in square brackets (optional words, a comment)
_ANNOTATION = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]")
# a comment in parentheses closing the answer («Фарадей (это навело его на ...)»), one nested pair allowed
_COMMENT = re.compile(r"\s*\((?:[^()]|\([^()]*\))*\)$")


def clean_answer(text):
    """``text`` on one line without its annotations: ``{...}`` and ``[...]`` anywhere and a ``(...)`` comment at
    the end («Пятиборец {зачет: многоборец}»: «Пятиборец»; «[Майкл] Фарадей (это навело его на ...)»:
    «Фарадей»). An answer that is all annotation keeps its words, the brackets dropped."""
    cleaned = " ".join(_ANNOTATION.sub(" ", text).split())
    while _COMMENT.search(cleaned):
        cleaned = _COMMENT.sub("", cleaned)
    return cleaned or " ".join(re.sub(r"[{}\[\]()]", " ", text).split())


def _one_line(text):
    text = str(text)
    return " ".join(text.split()) if "\n" in text or "\r" in text else text


def usable(doc):
    answer = doc.get("answer")
    return isinstance(answer, str) and bool(answer.strip())


def value(doc):
    number = doc.get("question_number")
    return UNIT_VALUE if number is None else number


def value_category(doc):
    """The question value as a breakdown category (1 for every row of config `qa`, which has none)."""
    return str(value(doc))


def theme(doc):
    """A question's cluster: its theme within its tour (config ``extended``: the questions of a theme may answer
    each other); None for a ``qa`` row, which has no theme (the question alone)."""
    return (doc.get("tour_name"), doc["topic"]) if doc.get("topic") else None


def meteor():
    """The process-wide scorer: tokenizer, pymorphy3 analyzer and caches are built once (russian_meteor.shared)."""
    return shared(TOKENIZER)


def score(reply, doc):
    """Per-example values of every metric; never raises for any reply object."""
    example = score_example(reply, doc["answer"], value(doc), meteor(), "official", THRESHOLD)
    return {
        "meteor": example["meteor"],
        "accuracy": float(example["correct"]),
        "game_score": float(example["game_score"]),
        "abstained": float(example["abstained"]),
        "unparseable": float(example["unparseable"]),
    }


def total(items):
    """The game score of a run: the sum of the per-question scores (0.0 for no questions)."""
    return float(sum(items))


def resources():
    """What the scores were computed with: tokenizer, lemmatizer, NLTK METEOR and its WordNet stand-in."""
    scorer = meteor()
    return {"tokenizer": scorer.tokenizer, "preprocessing": scorer.description, "threshold": THRESHOLD}


def configuration(tokenizer=TOKENIZER, order="official", threshold=THRESHOLD):
    """The scorer's settings (the task's signature; ``qahub evaluate`` passes its own options): the tokenizer in
    use, pymorphy3 and NLTK versions, NLTK's METEOR parameters as meteor_score applies them, the order of
    METEOR's arguments and the accuracy threshold."""
    import inspect
    from importlib.metadata import version

    from nltk.translate.meteor_score import meteor_score

    defaults = inspect.signature(meteor_score).parameters
    return {"tokenizer": shared(tokenizer).tokenizer, "pymorphy3": version("pymorphy3"), "nltk": version("nltk"),
            "meteor": {name: defaults[name].default for name in ("alpha", "beta", "gamma")},
            "wordnet": "none", "order": order, "threshold": threshold}


# the corpus these tasks run on (qahub.harness finds the tasks of every corpus by it)
CORPUS = "jeopardy"

TASKS = {
    "qahub_jeopardy": TaskSpec(
        configs=["extended", "qa"],
        splits=["validation", "train"],  # extended has only train; qa has validation and train
        # demonstrations from train when the evaluation split is another one (qa: validation); with extended
        # the evaluation split is train itself, and the task generator then sets no few-shot split
        fewshot_split="train",
        usable=usable,
        prompt=prompt,
        target=target,
        # the answer is one line: a base model's next line is its next «Вопрос:» (issue 43)
        until=["\n"],
        # the longest gold (clean_answer) of the 3,376 validation questions is 87 tokens with SmolLM2's
        # tokenizer (p99 31; Gemma's larger vocabulary needs fewer): 48 cut such answers
        max_gen_toks=96,
        score=score,
        metrics={
            "meteor": ("mean", True),
            "accuracy": ("mean", True),
            "game_score": (total, True),
            "abstained": ("mean", False),
            "unparseable": ("mean", False),
        },
        oracle={"accuracy": 1.0, "abstained": 0.0, "unparseable": 0.0},
        binary=["accuracy", "abstained", "unparseable"],
        ranges={"meteor": (0.0, 1.0)},  # game_score, a sum, has none
        categories={"question_number": value_category},
        # the question id of config extended; a `qa` row has none (None: the document's position)
        doc_id=lambda doc: doc.get("question_id"),
        # few-shot demonstrations never come from the question's own theme (qahub.harness.Demonstrations)
        cluster=theme,
        configuration=configuration,  # tokenizer, METEOR parameters, threshold
    ),
}


# --- training rows (qahub.training, issue 38): each task's non-template text of a doc, which decontamination
# compares with the evaluated docs': (doc -> its question or turns, whether it is a dialogue turn, whose question is
# then the conversation with the reply); the reply is the task's target
TRAINING_TEXTS = {"qahub_jeopardy": (lambda doc: [doc["question"]], False)}

__all__ = ["TASKS", "clean_answer", "parse_reply", "prompt", "resources", "score", "target"]
