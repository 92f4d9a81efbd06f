"""llm-jp-eval's JEMHopQA scores (v1.3.0), exactly.

Source: llm-jp-eval v1.3.0, vendored unmodified in swallow-llm/swallow-evaluation:
- ``llm-jp-eval/src/llm_jp_eval/utils.py``, ``get_evaluation_result``:
  ``y_pred = normalize(output.split("\\n\\n")[0].strip())``, ``y_true = normalize(sample["output"])``
  (``normalize`` = ``unicodedata.normalize("NFKC", ...)``); ``exact = y_pred == y_true`` (aggregated with
  sklearn's ``accuracy_score``) and ``char_f1 = fuzz.token_sort_ratio(y_pred, y_true) / 100.0`` (aggregated
  with ``statistics.mean``);
- ``llm-jp-eval/src/llm_jp_eval/datasets/jemhopqa.py``: the instruction, ``質問：{question}`` as input, the
  answer as output, metrics ``["char_f1"]``, the dev set as test set.

``fuzz`` is fuzzywuzzy 0.18.0 with python-Levenshtein installed (llm-jp-eval's poetry.lock pins both), so
``token_sort_ratio`` is, with its defaults (``force_ascii=True, full_process=True``):
``utils.full_process`` (characters 128-255 removed, each ``\\W`` character made a space, lower case, strip),
whitespace tokens sorted and joined by one space, then ``fuzz.ratio``: 100 when both strings are equal (two
empty strings included), 0 when one is empty, else ``int(round(100 * Levenshtein.ratio(a, b)))``.
"""

from __future__ import annotations

import re
import unicodedata
from statistics import mean

import Levenshtein

_LATIN1 = {code: None for code in range(128, 256)}  # fuzzywuzzy's asciidammit on str: translate them away
_NON_WORD = re.compile(r"(?ui)\W")  # fuzzywuzzy's StringProcessor.regex
_SURROGATE = re.compile("[\ud800-\udfff]")


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def model_answer(output) -> str:
    """llm-jp-eval's ``y_pred`` of a model output: NFKC of its first paragraph, stripped. A non-string output
    (never produced by llm-jp-eval) or one that is not Unicode text (lone surrogates) counts as the empty string."""
    if not isinstance(output, str) or _SURROGATE.search(output):
        return ""
    return normalize(output.split("\n\n")[0].strip())


def _process_and_sort(text: str) -> str:
    processed = _NON_WORD.sub(" ", text.translate(_LATIN1)).lower().strip()
    return " ".join(sorted(processed.split())).strip()


def ratio(a: str, b: str) -> int:
    """fuzzywuzzy's ``fuzz.ratio`` with python-Levenshtein (its decorators, then its rounding)."""
    if a == b:
        return 100
    if not a or not b:
        return 0
    return int(round(100 * Levenshtein.ratio(a, b)))


def token_sort_ratio(a: str, b: str) -> int:
    """fuzzywuzzy 0.18's ``fuzz.token_sort_ratio(a, b)`` with its default processing."""
    return ratio(_process_and_sort(a), _process_and_sort(b))


def example_scores(output, answer: str) -> dict:
    """``{"exact_match", "char_f1"}`` of one model output against the gold answer, as llm-jp-eval."""
    y_pred, y_true = model_answer(output), normalize(answer)
    return {"exact_match": 1.0 if y_pred == y_true else 0.0, "char_f1": token_sort_ratio(y_pred, y_true) / 100.0}


def aggregate(rows: list) -> dict:
    """llm-jp-eval's aggregates of one or more rows: accuracy (count / n) and ``statistics.mean`` of char_f1."""
    return {"exact_match": sum(row["exact_match"] for row in rows) / len(rows),
            "char_f1": float(mean(row["char_f1"] for row in rows))}
