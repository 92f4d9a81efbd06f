"""The first screen at few documents (issue 42, items 12-16): a new user's two tiny models (lm-eval ``--limit 20``,
lighteval ``--max-samples 20``; ``first_screen.py``) get a first screen that says what it cannot know: a
comparison on 2 of 20 paired documents is marked, a Δ whose test cannot detect a difference says so, an interval
from few units is marked approximate, every "(no interval)" gives its reason, the weakest categories are only
those with an interval from enough documents, and a run table says what each run read."""

import re
from types import SimpleNamespace

import pytest
from first_screen import DOC2DIAL, JEMHOPQA, JEOPARDY, LIMUR, report_data, task_run
from test_report_render import CHROMIUM, hostile_data, laid_out

from qahub.report.alike import pairing
from qahub.report.render import blocks, markdown, page, summary_blocks, weakest
from qahub.report.stats import MIN_UNITS


@pytest.fixture(scope="module")
def shown():
    data = report_data()
    report = blocks(data, {})
    return data, report, markdown(report), page(report, {})


def _summary(data) -> dict:
    """{(run, task column): the cell's text} of the first screen's table."""
    _, header, rows, _ = summary_blocks(data)[0]
    return {(row[0].parts[0].split(" (")[0], head.parts[0]): str(cell) for row in rows
            for head, cell in zip(header[1:], row[1:])}


def _summary_text(data) -> str:
    """The first screen as Markdown: the summary table and the paragraphs under it."""
    return markdown(summary_blocks(data))


# 12. fewer documents paired than the runs scored


def test_a_comparison_on_2_of_20_paired_documents_is_marked_never_a_plain_delta(shown):
    data, *_ = shown
    cell = _summary(data)[("tiny-b", "limur")]
    assert "≠ documents: 2 of 20 paired" in cell and "underpowered" in cell
    assert "≠ documents" not in _summary(data)[("tiny-b", "doc2dial grounding")]  # every document paired
    c = data["tasks"][LIMUR]["comparisons"]["tiny-b"]["exact_match"]
    assert c["n"] == 2 and c["paired_of"] == {"baseline": 20, "run": 20}
    assert c["underpowered"] is not None or c["no_star"] is not None  # report.json says it, not only the page
    text = _summary_text(data)
    assert "≠ documents: the Δ stands on fewer documents than the runs scored" in text  # the legend
    assert "≠ documents tiny-b, limur: paired on the 2 documents both scored (tiny-a 20, tiny-b 20): lighteval " \
           "draws --max-samples documents at random (tiny-b)" in text  # the reason, on the first screen


def test_a_partial_pairing_with_lighteval_names_its_random_draw_not_another_limit(shown):
    data, _, text, _ = shown
    assert "--limit?" not in text
    note = next(n for n in data["tasks"][LIMUR]["notes"] if n.startswith("tiny-b vs tiny-a"))
    assert "lighteval draws --max-samples documents at random" in note


def _paired_note(harnesses):
    runs = [SimpleNamespace(name=name, harness=harness, tasks={LIMUR: task_run(LIMUR, {}, ids)})
            for name, harness, ids in zip(("a", "b"), harnesses, (range(20), range(10, 30)))]
    return pairing(LIMUR, *runs).notes[0]


def test_two_lm_eval_runs_on_other_documents_are_told_of_limit_and_samples_not_of_lighteval():
    assert _paired_note(("lm-eval", "lm-eval")).endswith("another --limit, --samples or --sample-id?")
    assert "lighteval draws --max-samples documents at random (a)" in _paired_note(("lighteval", "inspect"))


def test_documents_with_no_value_in_either_run_are_not_fewer_paired():
    """A metric with no value on some documents (in both runs) pairs every document that has one: no mark."""
    from first_screen import SETTINGS

    from qahub.report.build import adjust, task_report
    from qahub.report.lm_eval_runs import LmEvalRun
    from qahub.report.runs import qahub_tasks

    values = {"a": [None] * 5 + [0.0, 1.0] * 5 + [1.0] * 5, "b": [None] * 5 + [1.0] * 15}
    runs = [LmEvalRun(name, name, "m", "r.json", tasks={LIMUR: task_run(LIMUR, {"exact_match": v}, range(20))})
            for name, v in zip(("tiny-a", "b"), values.values())]
    entry = task_report(LIMUR, qahub_tasks()[LIMUR], runs, "tiny-a", SETTINGS)
    adjust({LIMUR: entry})
    c = entry["comparisons"]["b"]["exact_match"]
    assert c["n"] == 15 and c["paired_of"] == {"baseline": 15, "run": 15}
    data = {"settings": SETTINGS, "tasks": {LIMUR: entry}, "skipped": [],
            "runs": {run.name: {"harness": "lm-eval", "model": "m"} for run in runs}}
    assert "≠ documents" not in _summary(data)[("b", "limur")]


# 13/14. a Δ that cannot be told apart, approximate intervals, no interval


def test_a_delta_0_of_20_documents_all_0_is_underpowered_never_a_bare_delta(shown):
    data, *_ = shown
    c = data["tasks"][JEMHOPQA]["comparisons"]["tiny-b"]["exact_match"]
    assert c["delta"] == 0 and c["mde"] is None
    assert c["underpowered"] == ("underpowered: no difference can be significant (0 discordant documents: the "
                                 "paired values do not differ)")
    cell = _summary(data)[("tiny-b", "jemhopqa")]
    assert "Δ 0 · underpowered" in cell
    for text in _summary(data).values():  # no cell says "Δ 0" and nothing after it
        assert not re.search(r"Δ [+-]?0(\.0+)?($|;)", text), text


def test_a_comparison_with_no_test_says_no_test_possible_and_why():
    data = hostile_data()
    data["tasks"]["qahub_limur"]["best"] = None
    c = data["tasks"]["qahub_limur"]["comparisons"]["better"]["exact_match"]
    c.update(p=None, p_holm=None, p_bh=None, star=False, no_star=None, mde=None, ci=[None, None],
             test="1 document: no interval, test or MDE", delta=0.0)
    text = _summary_text(data)
    cell = _summary(data)[("better", "limur")]
    assert "Δ 0 · no test possible" in cell and "underpowered" not in cell
    assert "no test possible better, limur: 1 document: no interval, test or MDE." in text


def test_an_interval_from_fewer_units_than_a_star_needs_is_marked_approximate_on_the_first_screen(shown):
    data, _, _, html = shown
    assert data["tasks"][DOC2DIAL]["cluster"]["runs"]["tiny-a"]["clusters"] == 3 < MIN_UNITS
    assert "≈ 3 dialogues" in _summary(data)[("tiny-a", "doc2dial grounding")]
    assert f"≈ N: the interval stands on fewer than {MIN_UNITS} independent units" in _summary_text(data)
    assert "approximate: an interval from 3 dialogues, fewer than the 10 a star needs" in html  # on hover
    assert "≈" not in _summary(data)[("tiny-a", "limur")]  # 20 documents


def _cells_with(html, text):
    return [m.group(0) for m in re.finditer(r"<td[^>]*>.*?</td>", html) if text in m.group(0)]


def test_every_no_interval_on_the_first_screen_gives_its_reason_on_hover_and_below(shown):
    data, _, _, html = shown
    summary = html[:html.index("<h2>Runs</h2>")]
    cells = _cells_with(summary, "(no interval)")
    assert cells  # tiny-b's doc2dial exact: 1 of 7 right, a percentile bootstrap over 3 dialogues
    why = data["tasks"][DOC2DIAL]["scores"]["tiny-b"]["exact"]["no_interval"]
    assert why.startswith("3 dialogues: a percentile bootstrap over fewer than 4 gives no sensible interval")
    for cell in cells:
        assert re.search(r'title="[^"]*no interval: [^"]+"', cell), cell
    assert f"(no interval) tiny-b, doc2dial grounding: {why}." in _summary_text(data)


def test_meteor_knows_its_range_and_0_everywhere_gets_an_exact_interval(shown):
    """Issue 42 item 14: METEOR is bounded in [0, 1] (the task declares it): 0 on every question is 0 [0, 0.84],
    Clopper-Pearson over its 2 themes, as accuracy's would be, not "a value no known range bounds"."""
    data, *_ = shown
    entry = data["tasks"][JEOPARDY]
    cell = entry["scores"]["tiny-b"]["meteor"]
    assert cell["ci"][0] == 0.0 and 0.8 < cell["ci"][1] < 0.9 and cell["method"].startswith("Clopper-Pearson")
    assert entry["ranges"]["meteor"] == [0.0, 1.0] and entry["ranges"]["game_score"] is None


def test_a_no_interval_of_an_earlier_report_says_it_does_not_know_why():
    data = hostile_data()
    data["tasks"]["qahub_limur"]["scores"]["base"]["exact_match"]["ci"] = [None, None]
    assert "(no interval) base, limur: the report does not say why (an earlier report)." in _summary_text(data)


def test_runs_with_the_same_reason_on_the_same_tasks_share_a_line_and_each_cell_says_it_on_hover():
    data = hostile_data()
    for name in ("extra0", "extra1"):
        data["tasks"]["qahub_limur"]["scores"][name]["exact_match"]["ci"] = [None, None]
    text = _summary_text(data)
    assert "(no interval) extra0, extra1, limur: the report does not say why (an earlier report)." in text
    html = page(blocks(data, {}), {})
    assert all("different prompts (chat format)" in cell for cell in _cells_with(html, "≠ prompts"))


# 15. the weakest categories


def test_no_weakest_category_from_two_documents(shown):
    data, *_ = shown
    cats = data["tasks"][JEOPARDY]["breakdown"]["question_number"]
    assert cats["1"]["tiny-b"]["meteor"]["value"] < cats["1"]["tiny-a"]["meteor"]["value"]  # weaker, but n = 2
    assert weakest(data, "tiny-b") == [] and "weakest" not in _summary_text(data)


def _with_categories(cats):
    data = hostile_data()
    entry = data["tasks"]["qahub_limur"]
    entry["breakdown"] = {"task_type": {name: {"base": {"exact_match": base}, "better": {"exact_match": mine}}
                                        for name, (base, mine) in cats.items()}}
    return data


def test_weakest_categories_have_an_interval_and_enough_documents_and_sensible_digits():
    cell = lambda v, low, high, n: {"value": v, "ci": [low, high], "n": n}  # noqa: E731
    data = _with_categories({
        "tiny": (cell(0.5, 0.1, 0.9, 2), cell(0.123456, 0.0, 0.8, 2)),  # n = 2: says nothing
        "bare": (cell(0.5, None, None, 40), cell(0.1, None, None, 40)),  # no interval
        "big": (cell(0.61234, 0.5012, 0.7133, 60), cell(0.41876, 0.31234, 0.52345, 60))})
    assert weakest(data, "better") == ["qahub_limur task_type=big: exact_match 0.42 [0.31, 0.52] against "
                                       "0.61 [0.50, 0.71] (n=60)"]


# 16. the run table


def test_each_run_s_dataset_config_split_shots_and_prompts_are_on_the_page_with_differences_marked(shown):
    data, report, text, _ = shown
    facts = data["tasks"][JEMHOPQA]["run_facts"]
    assert facts["tiny-b"] == {"harness": "lighteval", "dataset": "qahub/jemhopqa", "config": "v1.1", "split": "dev",
                               "n_shot": 3, "prompt_format": "raw text", "documents": 20, "limit": 20}
    table = next(b for b in report if b[0] == "table" and b[1][:2] == ["task", "runs"])
    assert table[1] == ["task", "runs", "dataset", "config", "split", "shots", "prompts", "documents"]
    rows = {(row[0], row[1]): [str(cell) for cell in row[2:]] for row in table[2]}
    assert rows[("jemhopqa", "tiny-a (baseline)")] == ["qahub/jemhopqa", "v1.1", "dev", "0", "raw text",
                                                       "20 (--limit 20, the first 20)"]
    assert rows[("jemhopqa", "tiny-b")] == ["qahub/jemhopqa", "v1.1", "dev", "≠ 3", "raw text",
                                            "≠ 20 (--max-samples 20, drawn at random)"]
    assert "≠: not what tiny-a read on the task" in text


def test_runs_that_read_alike_share_a_row():
    data = hostile_data()
    facts = {"harness": "lm-eval", "dataset": "qahub/limur", "config": "rwsd", "split": "test", "n_shot": 0,
             "prompt_format": "raw text", "documents": 20, "limit": None}
    data["tasks"]["qahub_limur"]["run_facts"] = {name: dict(facts) for name in data["runs"]}
    rows = next(b for b in blocks(data, {}) if b[0] == "table" and b[1][:2] == ["task", "runs"])[2]
    assert len(rows) == 1 and rows[0][1].startswith("base (baseline), better") and rows[0][1].endswith("3 more")


def test_a_local_dataset_folder_is_named_not_its_path():
    from qahub.report.build import run_facts

    run = task_run(LIMUR, {}, range(2), dataset=("/home/someone/project/exports/limur", "rwsd", "test"))
    assert run_facts(run, "lm-eval")["dataset"] == "limur"  # as its published copy reads (outgoing.clean cuts it)


@pytest.mark.skipif(CHROMIUM is None, reason="needs a Chromium (apt-get install chromium) to lay the page out")
def test_the_marks_their_reasons_and_the_run_table_are_within_the_first_1400x900_screen(shown, tmp_path):
    """Laid out by Chromium: where the top of the first element starting with each text is."""
    _, _, _, html = shown
    texts = ["≠ documents: 2", "≠ documents tiny-b", "(no interval) tiny-b", "≈ 3 dialogues", "What each run read"]
    top = ("(t => { for (const e of document.querySelectorAll('span,p,h3')) if (e.textContent.startsWith(t)) "
           "return Math.round(e.getBoundingClientRect().top); return -1; })")
    tops = [int(found) for found in laid_out(html, tmp_path, f"{texts}.map({top})").split(",")]
    assert all(0 <= found < 900 for found in tops), dict(zip(texts, tops))
