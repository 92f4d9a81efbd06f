"""Real model replies meet the scorers (issue 43 item 3): each case is a reply a real model gave, cut where lm-eval
cuts it (the task's stop sequences, ``planning.before_stop``, which inspect's solver and lighteval's reply reader
apply too) and scored by the task's declared reading; the official metrics themselves are unchanged."""

import pytest
from qahub.metrics.jemhopqa.llm_jp_eval import example_scores

from qahub import planning

JEMHOPQA = planning.all_tasks()["qahub_jemhopqa"]
DERIVATIONS = planning.all_tasks()["qahub_jemhopqa_derivations"]


def _doc(answer: str) -> dict:
    return {"qid": "2138f0638f363e75593d09df560db76c", "answer": answer, "derivations": []}


def _scored(spec, reply: str, doc: dict) -> dict:
    return spec.score(planning.before_stop(reply, spec.until), doc)


def test_gemmas_answer_line_then_its_next_answer_line_scores_the_first_answer_without_label_or_quotes():
    """Gemma 3 270M on JEMHopQA v1.2 dev (lm-eval, 0-shot): the right title on its first line, in the prompt's
    own 回答 label and 『』 quotes, then it went on with another 回答 line; it scored EM 0 and char F1 0.39.
    The first 回答 line is the answer read."""
    reply = "回答：『ファイナルファンタジーXIII』\n回答：『ダンガンロンパ 希望の学園と絶望の高校生』\n質問：『"
    assert planning.before_stop(reply, JEMHOPQA.until) == reply.rsplit("\n", 1)[0]  # its next 質問 stops it
    scores = _scored(JEMHOPQA, reply, _doc("ファイナルファンタジーXIII"))
    assert scores == {"exact_match": 1.0, "char_f1": 1.0, "unparseable": 0.0}


def test_gemmas_wrong_date_is_scored_on_the_date_not_on_the_label():
    """Gemma 3 270M: '回答：2016年10月1日' for gold '2021年8月14日': the label is not part of the answer."""
    gold = "2021年8月14日"
    scores = _scored(JEMHOPQA, "回答：2016年10月1日", _doc(gold))
    assert scores["exact_match"] == 0.0 and scores["unparseable"] == 0.0
    assert scores["char_f1"] == example_scores("2016年10月1日", gold)["char_f1"]


def test_a_reply_without_the_label_is_read_exactly_as_llm_jp_eval_reads_it():
    gold = "ファイナルファンタジーXIII"
    for reply in ("ファイナルファンタジーXIII", "『ファイナルファンタジーXIII』は2009年", "答えは不明です\n\n質問"):
        cut = planning.before_stop(reply, JEMHOPQA.until)
        assert _scored(JEMHOPQA, reply, _doc(gold))["char_f1"] == example_scores(cut, gold)["char_f1"]


def test_a_reasoning_model_is_not_cut_before_its_answer():
    """A model that reasons on lines of its own (no blank line) before the labelled answer: no stop sequence of the
    task falls inside its reasoning, and its answer is read after it."""
    reply = ("<think>\nダンガンロンパは2010年、ファイナルファンタジーXIIIは2009年に発売された。\n早いのは後者。\n</think>\n"
             "回答：ファイナルファンタジーXIII")
    assert planning.before_stop(reply, JEMHOPQA.until) == reply
    assert _scored(JEMHOPQA, reply, _doc("ファイナルファンタジーXIII"))["exact_match"] == 1.0


def test_the_derivations_task_stops_at_a_next_question_and_keeps_its_derivations():
    reply = '回答: 星の歌\n導出: [["星の歌", "発売日", ["2001年4月1日"]]]\n質問：月の歌は'
    assert planning.before_stop(reply, DERIVATIONS.until) == '回答: 星の歌\n導出: [["星の歌", "発売日", ["2001年4月1日"]]]'


@pytest.mark.parametrize("until, reply, kept", [
    (["\n"], " Москва.\nВопрос: Какая столица Франции?", " Москва."),  # Gemma's next «Вопрос:» line
    (["\n\n", "\n質問"], " 東京です。\n質問: 日本の首都は", " 東京です。"),
    (["\n\n"], "no stop here", "no stop here"),
])
def test_before_stop_cuts_as_lm_eval_does(until, reply, kept):
    """inspect's hf/ provider stops at a stop sequence but keeps it (and the rest of its token): the solver cuts
    the completion as lm-eval's postprocess_generated_text does."""
    from lm_eval.models.utils import postprocess_generated_text

    assert planning.before_stop(reply, until) == kept == postprocess_generated_text(reply, until, None)


def test_gemmas_next_question_instead_of_an_answer_is_an_abstention_in_jeopardy():
    """Gemma 3 270M on 9 of 30 Jeopardy validation questions (lm-eval, 0-shot) answered nothing: its greedy
    continuation of «Ответ:» is its own next question. Cut at the task's stop it is empty: an abstention (game
    score 0), not a wrong answer, and not an answer lost to the stop."""
    spec = planning.all_tasks()["qahub_jeopardy"]
    reply = '\nВопрос: В 1806 году "ОНА" принимала участие в жестоком набеге'
    assert planning.before_stop(reply, spec.until) == ""
    scores = spec.score(planning.before_stop(reply, spec.until), {"answer": '"Юнона"', "question_number": 10})
    assert scores["abstained"] == 1.0 and scores["game_score"] == 0.0 and scores["unparseable"] == 0.0
