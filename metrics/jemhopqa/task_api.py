"""lm-evaluation-harness tasks for JEMHopQA (imported by qahub's generated task folders).

- ``qahub_jemhopqa``: answer only, in llm-jp-eval v1.3.0's prompt style and with its JEMHopQA scores
  (``exact_match``, ``char_f1``: see ``llm_jp_eval.py`` for the source files).
- ``qahub_jemhopqa_derivations``: the answer and the derivation triples (reply format in ``replies.py``),
  scored with the official JEMHopQA scorer (``scoring.py``): answer ``a_em``/``a_score`` and derivation F1 for
  entities, relations and both, with the best Sudachi dictionary installed and no synonyms
  (``configuration()`` says which); ``metric.compute(..., synonyms="none")`` gives the same numbers.
"""

from __future__ import annotations

import statistics
import warnings

from .llm_jp_eval import example_scores, model_answer
from .records import check_reference, reference_answer
from .replies import answer_text, parse_reply, render
from .scoring import Similarity, question_row
from .task_spec import TaskSpec
from .tokens import get_tokenizer

# llm-jp-eval v1.3.0: the default template of utils.py get_evaluation_prompt; the instruction and the input
# format of datasets/jemhopqa.py
HEADER = "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。要求を適切に満たす応答を書きなさい。"
INSTRUCTION = ("質問を入力とし、回答を出力してください。回答の他には何も含めないことを厳守してください。"
               "回答が'はい'と'いいえ'で答えることができる場合、'YES'と'NO'で答えてください。")
DERIVATIONS_INSTRUCTION = (
    "質問を入力とし、回答と、回答を導く導出（知識の三つ組）を出力してください。"
    "1行目に「回答: 」に続けて回答だけを書き、2行目に「導出: 」に続けて、三つ組 [主語, 関係, [目的語, ...]] の"
    "JSONリストを1行で書いてください（例: 導出: [[\"東京タワー\", \"完成年\", [\"1958年\"]]]）。"
    "回答が'はい'と'いいえ'で答えることができる場合、'YES'と'NO'で答えてください。"
    "この2行の他には何も含めないことを厳守してください。"
)
STOP = "\n\n"  # llm-jp-eval reads the first paragraph
# where a base model starts its next example: a new 質問 line. Not every line break, nor a next 回答 line (Gemma
# 3 270M repeats one: '回答：『ファイナルファンタジーXIII』\n回答：『ダンガンロンパ…』', and the answer task reads the
# first, replies.answer_text), so that a model reasoning on lines of its own keeps its 回答 line after them
NEXT = ("\n質問",)
QUESTION_TYPES = ["compositional", "comparison"]  # the builder's ClassLabel names of `type`
SYNONYMS = "none"  # deterministic across machines: chikkarpy + user.dic cannot be had offline
_SCORER = {}


def llm_jp_eval_prompt(instruction: str, question: str) -> str:
    """llm-jp-eval's zero-shot prompt (its few-shot demonstrations sit between the instruction and the input)."""
    return f"{HEADER}\n\n### 指示:\n{instruction}\n\n### 入力:\n質問：{question}\n\n### 応答:\n"


def answer_prompt(doc) -> str:
    return llm_jp_eval_prompt(INSTRUCTION, doc["question"])


def derivations_prompt(doc) -> str:
    return llm_jp_eval_prompt(DERIVATIONS_INSTRUCTION, doc["question"])


def _no_stop(text: str) -> str:
    while STOP in text:
        text = text.replace(STOP, "\n")
    return text


def answer_target(doc) -> str:
    """The gold answer (a blank line inside it, which no JEMHopQA answer has, would become one line break)."""
    return _no_stop(reference_answer(doc, 0))


def derivations_target(doc) -> str:
    gold = check_reference(doc, 0)
    return render(gold["answer"], gold["derivations"])


def similarity() -> Similarity:
    """The official similarity with the best installed Sudachi dictionary; built once per process."""
    if "sim" not in _SCORER:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # configuration() says which dictionary is used
            _SCORER["sim"] = Similarity(get_tokenizer(None, SYNONYMS, None, True), True)
    return _SCORER["sim"]


def configuration() -> dict:
    """The Sudachi dictionary and synonyms the derivations task scores with (``compute``'s keywords)."""
    tokenizer = similarity().tokenizer
    return {"dictionary": tokenizer.dictionary, "synonyms": tokenizer.synonyms.description}


def derivations_configuration() -> dict:
    """What the derivations task scores with (its signature's scorer settings): the official scorer with Sudachi
    mode C (tokens.Tokenizer), ``configuration()``'s dictionary and synonyms, question_row's assignment solver."""
    return {"scorer": "jemhopqa-official", "tokenizer": "sudachi", "mode": "C", **configuration(),
            "solver": "assignment"}


def answer_configuration() -> dict:
    """What the answer task scores with: llm-jp-eval v1.3.0's exact_match and char_f1 (NFKC, fuzzywuzzy's
    ratio by python-Levenshtein)."""
    from importlib.metadata import version

    return {"scorer": "llm-jp-eval-1.3.0", "normalize": "NFKC", "levenshtein": version("Levenshtein")}


def score_answer(reply, doc) -> dict:
    """llm-jp-eval's exact_match and char_f1 of the reply as a model output (its answer, ``answer_text``: the
    prompt's own 回答 label and quotes taken off, the official scores unchanged); unparseable: nothing to read."""
    output = answer_text(reply)
    scores = example_scores(output, reference_answer(doc, 0))
    return {**scores, "unparseable": 1.0 if model_answer(output) == "" else 0.0}


def score_derivations(reply, doc) -> dict:
    """The official scores of the answer and derivations read from the reply; unparseable: no readable
    derivations (they score 0, as an unread answer does)."""
    gold = check_reference(doc, 0)
    read = parse_reply(reply)
    row = question_row(similarity(), {"answer": read.answer, "derivations": read.derivations}, gold)
    return {"a_em": float(row["a_em"]), "a_score": float(row["a_score"]), "e_f1": float(row["e_f"]),
            "r_f1": float(row["r_f"]), "er_f1": float(row["er_f"]),
            "unparseable": 0.0 if read.derivations_read else 1.0}


def question_type(doc) -> str:
    """``type`` of a doc: the ClassLabel index an export holds, or the name the source file has."""
    kind = doc["type"]
    return QUESTION_TYPES[kind] if isinstance(kind, int) else str(kind)


def mean(values) -> float:
    """statistics.mean, as llm-jp-eval aggregates char_f1; 0.0 for no values."""
    values = list(values)
    return float(statistics.mean(values)) if values else 0.0


# the fields both tasks share; target_delimiter "": a demonstration's answer follows "### 応答:\n" directly, as in
# llm-jp-eval's template (lm-eval's default is " ")
_COMMON = {"configs": ["v1.2", "v1.1", "v1.0"], "splits": ["validation"], "fewshot_split": "train",
           "until": [STOP, *NEXT], "target_delimiter": "", "categories": {"type": question_type},
           "doc_id": lambda doc: doc["qid"]}

# the corpus these tasks run on (qahub.harness finds the tasks of every corpus by it)
CORPUS = "jemhopqa"

TASKS = {
    "qahub_jemhopqa": TaskSpec(
        **_COMMON,
        prompt=answer_prompt,
        target=answer_target,
        max_gen_toks=64,
        score=score_answer,
        configuration=answer_configuration,  # llm-jp-eval's scores
        metrics={"exact_match": ("mean", True), "char_f1": (mean, True), "unparseable": ("mean", False)},
        oracle={"exact_match": 1.0, "char_f1": 1.0, "unparseable": 0.0},
        binary=["exact_match", "unparseable"],
    ),
    "qahub_jemhopqa_derivations": TaskSpec(
        **_COMMON,
        prompt=derivations_prompt,
        target=derivations_target,
        max_gen_toks=384,
        score=score_derivations,
        configuration=derivations_configuration,  # Sudachi mode C, its dictionary and synonyms
        metrics={"a_em": ("mean", True), "a_score": ("mean", True), "e_f1": ("mean", True),
                 "r_f1": ("mean", True), "er_f1": ("mean", True), "unparseable": ("mean", False)},
        oracle={"a_em": 1.0, "a_score": 1.0, "e_f1": 1.0, "r_f1": 1.0, "er_f1": 1.0, "unparseable": 0.0},
        binary=["a_em", "unparseable"],
    ),
}


# --- training rows (qahub.training, issue 38): each task's non-template text of a doc, which decontamination
# compares with the evaluated docs': (doc -> its question or turns, whether it is a dialogue turn, whose question is
# then the conversation with the reply); the reply is the task's target
TRAINING_TEXTS = {name: (lambda doc: [doc["question"]], False)
                  for name in ("qahub_jemhopqa", "qahub_jemhopqa_derivations")}
