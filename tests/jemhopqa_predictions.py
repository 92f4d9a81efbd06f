"""Deterministic JEMHopQA predictions derived from gold rows, in the official prediction format.

Used three ways: to produce the inputs the official ``evaluate.py`` was run on (the resulting numbers are in
``tests/data/jemhopqa_official_scores.json``), by ``tests/test_jemhopqa_metric.py`` to regenerate the same
inputs, and by the benchmark as realistic noisy predictions.

    python tests/jemhopqa_predictions.py DEV_JSON OUT_DIR     # writes OUT_DIR/<kind>.json for every kind
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

KINDS = ("gold", "answer_perturbed", "derivation_perturbed", "shifted", "noisy", "partial", "synonyms")

# a small synonym table of our own (word -> synonyms), for the synonym path of both scorers
SYNONYMS = {
    "生年月日": ["誕生日", "生誕"],
    "誕生日": ["生年月日"],
    "所在地": ["住所", "場所"],
    "住所": ["所在地"],
    "発売日": ["リリース日"],
    "主演": ["主役"],
    "主役": ["主演"],
    "職業": ["仕事"],
}
_SYNONYM_SWAPS = {"生年月日": "誕生日", "所在地": "住所", "主演": "主役", "職業": "仕事"}


def _perturb_answer(answer: str, index: int, rows: list) -> object:
    rule = index % 10
    if rule == 1:
        return answer[:-1]
    if rule == 2:
        return f"「{answer}」 （仮）"
    if rule == 3:
        return {"YES": "いいえ", "NO": "はい"}.get(answer, "約" + answer)
    if rule == 4:
        return "".join(str((int(c) + 1) % 10) if c.isdigit() else c for c in answer) + "頃"
    if rule == 5:
        return answer + "の本社"
    if rule == 6:
        return ""
    if rule == 7:
        return None
    if rule == 8:
        return {"YES": "Yes", "NO": "No"}.get(answer, "Yes")
    if rule == 9:
        return rows[(index + 3) % len(rows)]["answer"]
    return answer


def _perturb_derivations(steps: list, index: int, rows: list) -> list:
    steps = copy.deepcopy(steps)
    rule = index % 9
    if rule == 1:
        return steps[:-1]
    if rule == 2:
        return [[s, r + "の" + r[:1], o] for s, r, o in steps]
    if rule == 3:
        return [[s, r, [obj[:-1] or obj for obj in o]] for s, r, o in steps]
    if rule == 4:
        return steps + copy.deepcopy(rows[(index + 5) % len(rows)]["derivations"][:1])
    if rule == 5:
        return steps[::-1]
    if rule == 6:
        return []
    if rule == 7:
        return [[s, r, o + ["不明"]] for s, r, o in steps]
    if rule == 8:
        return [[f"{s}（{r}）", r, o] for s, r, o in steps]
    return steps


def _swap_synonyms(steps: list) -> list:
    return [[s, _SYNONYM_SWAPS.get(r, r), list(o)] for s, r, o in steps]


def make_predictions(rows: list, kind: str) -> dict:
    """Official-format predictions ``{"answer": {qid: ...}, "derivations": {qid: [...]}}`` of ``kind``."""
    answers, derivations = {}, {}
    for index, row in enumerate(rows):
        qid, answer, steps = row["qid"], row["answer"], row["derivations"]
        if kind == "shifted":
            other = rows[(index + 1) % len(rows)]
            answer, steps = other["answer"], other["derivations"]
        elif kind == "answer_perturbed":
            answer = _perturb_answer(answer, index, rows)
        elif kind == "derivation_perturbed":
            steps = _perturb_derivations(steps, index, rows)
        elif kind in ("noisy", "partial"):
            answer = _perturb_answer(answer, index * 7, rows)
            steps = _perturb_derivations(steps, index * 5, rows)
        elif kind == "synonyms":
            steps = _swap_synonyms(_perturb_derivations(steps, index, rows))
        elif kind != "gold":
            raise ValueError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        if kind == "partial" and index % 11 == 0:
            continue  # no prediction at all
        answers[qid] = answer
        if not (kind == "partial" and index % 13 == 0):  # answer only
            derivations[qid] = copy.deepcopy(steps)
    return {"answer": answers, "derivations": derivations}


def main(dev_json: str, out_dir: str):
    rows = json.loads(Path(dev_json).read_text(encoding="utf-8"))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        text = json.dumps(make_predictions(rows, kind), ensure_ascii=False, indent=1)
        (out / f"{kind}.json").write_text(text, encoding="utf-8")
    (out / "synonyms_table.json").write_text(json.dumps(SYNONYMS, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
