"""``qahub report``'s pages and figures from report.json-shaped numbers (no run needed): the first screen answers
(short column heads, harness and model, marks for the best run, an unparseable run, a caveat, a run not compared,
a p_holm below alpha without a star), numbers rounded to their interval, the methods after the tables, skipped
tasks with their reasons, figures readable at 1,400 px."""

import copy
import json
import re
import shutil
import subprocess

import pytest

from qahub.report import render
from qahub.report.render import blocks, markdown, number, page, places, score_text

TASKS = {"qahub_doc2dial_grounding": "exact", "qahub_doc2dial_response": "bleu", "qahub_jemhopqa": "exact_match",
         "qahub_jemhopqa_derivations": "a_em", "qahub_jeopardy": "meteor", "qahub_limur": "exact_match",
         "qahub_topical_chat_freq": "f1", "qahub_topical_chat_rare": "f1"}
LONG = "meta-llama/Llama-3.1-70B-Instruct-quantised-awq-4bit-with-a-run-name-nobody-would-shorten"


def _cell(value, low, high, n=20):
    return {"value": value, "ci": [low, high], "n": n}


def _compared(delta, low, high, p_holm, **more):
    return {"delta": delta, "ci": [low, high], "p": p_holm / 4, "p_holm": p_holm, "p_bh": p_holm / 2,
            "test": "paired bootstrap over conversations", "n": 20, "mde": 0.2, "underpowered": None, **more}


def hostile_data(runs=8):
    """A report of ``runs`` runs (one of them named at length, one whose replies are all unparseable, one whose
    prompts differ, one not compared) on every qahub task, one of them with one conversation, as the report's
    data contract has it (``star``, ``no_star``, ``best``, ``caveats``, ``not_compared``, skipped as dicts)."""
    names = ["base", "better", LONG, "unreadable", "chat-format", "other-docs"] + [f"extra{i}" for i in range(runs - 6)]
    data = {"settings": {"resamples": 1000, "seed": 1, "confidence": 0.95, "baseline": "base", "power": 0.8},
            "runs": {name: {"model": f"org/{name}-model", "harness": ["lm-eval", "inspect", "lighteval"][i % 3],
                            "path": f"runs/{name}", "results_file": f"runs/{name}/results.json"}
                     for i, name in enumerate(names)},
            "tasks": {}, "skipped": [{"run": "base", "task": "mmlu", "reason": "not a qahub task"},
                                     {"run": "better", "task": "qahub_limur", "reason": "no samples file"}]}
    for task, main in TASKS.items():
        scores, comparisons = {}, {}
        for name in names:
            value = 0.3 if name == "base" else 0.8 if name == "better" else 0.5
            scores[name] = {main: _cell(value, value - 0.2, value + 0.2),
                            "unparseable": _cell(1.0 if name == "unreadable" else 0.05, 0.0, 1.0)}
            if name == "unreadable":
                value, scores[name][main] = 0.0, _cell(0.0, 1.388e-17, 0.2153)  # float noise at the low end
            if name != "base":
                comparisons[name] = {main: _compared(value - 0.3, value - 0.5, value - 0.1, 0.2)}
        comparisons["better"][main].update(p_holm=0.001, star=True, no_star=None, units=20)
        comparisons["chat-format"][main].update(p_holm=0.001, star=False, no_star="different prompts")
        comparisons.pop("other-docs")
        entry = {"main_metric": main, "scores": scores, "breakdown": {}, "comparisons": comparisons,
                 "notes": [], "warnings": [], "cluster": {"field": "conversation"}, "best": "better",
                 "caveats": {"chat-format": ["different prompts (chat format)"]},
                 "not_compared": {"other-docs": "no document in common with base"}}
        data["tasks"][task] = entry
    one = data["tasks"]["qahub_topical_chat_freq"]  # one conversation: no interval, a p but no star
    one["best"] = None
    one["scores"]["better"]["f1"] = _cell(0.02826, None, None)
    one["comparisons"]["better"]["f1"].update(ci=[None, None], p_holm=0.017, star=False, units=1,
                                              no_star="1 conversation: no test", mde=None, mde_note="not estimable")
    return data


@pytest.fixture(scope="module")
def hostile():
    data = hostile_data()
    report = blocks(data, {})
    return data, report, markdown(report), page(report, {})


def _summary_rows(text):
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("| run |")))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            return lines[start], rows
        rows.append(line)


@pytest.mark.parametrize("cell, text", [
    (_cell(1.388e-17, 1.388e-17, 0.2153), "0 [0, 0.22]"),  # float noise is 0, not 1.388e-17
    (_cell(0.3333, 0.06149, 0.7923), "0.33 [0.06, 0.79]"),
    (_cell(42.857, 0.0, 50.0), "43 [0, 50]"),
    (_cell(37.19, 25.69, 100.0), "37 [26, 100]"),
    (_cell(0.5, 0.0, 1.0), "0.5 [0, 1.0]"),
    (_cell(0.1234, 0.1201, 0.1249), "0.1234 [0.1201, 0.1249]"),  # 0.0048 wide: four places
    (_cell(0.02826, 0.02826, 0.02826), "0.02826 [0.02826, 0.02826]"),  # no width: four significant digits
    (_cell(0.02826, None, None), "0.02826 (no interval)"),
    (_cell(-2.5e-18, -0.25, 0.25), "0 [-0.25, 0.25]"),  # no "-0"
    (None, "–"),
])
def test_a_score_is_rounded_to_what_its_interval_supports(cell, text):
    assert score_text(cell) == text


def test_numbers_alone_drop_float_noise_and_a_difference_is_signed():
    assert number(7.78e-17) == "0" and number(-1e-12) == "0" and number(None) == "–" and number(float("nan")) == "–"
    assert number(0.123456) == "0.1235" and number(1e-5) == "1e-05"  # a real small value stays
    assert places(0.0, 50.0) == 0 and places(0.06, 0.79) == 2 and places(0.5, 0.5) is None
    assert places(0.0, 1e-17) is None and places(None, 1.0) is None
    assert render.delta_text(_compared(0.6667, 0.5, 1.0, 0.1)) == "+0.67 [0.50, 1.00]"
    assert render.delta_text(_compared(-0.0, -0.2, 0.2, 1.0)) == "0 [-0.20, 0.20]"
    assert render.mde_text({"mde": 7.78e-17, "ci": [0.0, 0.5]}) == "0"
    assert render.mde_text({"mde": None, "mde_note": "not estimable", "ci": [0.0, 0.5]}) == "not estimable"


def test_the_summary_has_short_column_heads_and_the_full_names_in_its_legend(hostile):
    data, report, text, html = hostile
    header, rows = _summary_rows(text)
    heads = header.strip("|").split("|")[1:]
    assert len(heads) == len(TASKS) and len(rows) == len(data["runs"])
    assert all(len(h.strip().split(";")[0]) <= render.LABEL for h in heads)
    assert "doc2dial grounding; exact" in header and "qahub_" not in header
    legend = text[text.index("Columns: "):].splitlines()[0]
    assert all(f"= {task} ({main})" in legend for task, main in TASKS.items())
    summary = re.search(r'<table class="summary">.*?</table>', html, re.S).group(0)
    heads = re.findall(r"<th[^>]*>(.*?)</th>", summary)
    assert len(heads) == len(TASKS) + 1
    assert all(len(re.sub("<[^>]+>", "", re.search(r'<span class="v">(.*?)</span>', h).group(1))) <= render.LABEL
               for h in heads[1:])
    assert all(f'title="{task}: {main}"' in summary for task, main in TASKS.items())  # the full name as tooltip
    # nothing in it needs more width than a cell has: long names break anywhere, score spans do not
    assert "overflow-wrap:anywhere" in render.STYLE and "max-width:100%" in render.STYLE


def test_every_run_s_harness_and_model_are_on_the_first_screen(hostile):
    data, _, text, html = hostile
    _, rows = _summary_rows(text)
    summary = re.search(r'<table class="summary">.*?</table>', html, re.S).group(0)
    for name, run in data["runs"].items():
        row = next(r for r in rows if r.startswith(f"| {name}"))
        assert f"{run['harness']} · {run['model']}" in row
        assert f'<span class="sub">{run["harness"]} · {run["model"]}</span>' in summary


def test_the_summary_marks_best_unparseable_caveats_not_compared_and_a_p_without_a_star(hostile):
    data, _, text, html = hostile
    _, rows = _summary_rows(text)
    row = {name: next(r for r in rows if r.startswith(f"| {name}")).split(" | ")[1:] for name in data["runs"]}
    assert all("best" in cell and " *" in cell for cell in row["better"][:6])  # entry["best"], entry's star
    assert "best" not in row["better"][6] and "*" not in row["better"][6]  # one conversation: best None, no star
    assert "0.02826 (no interval)" in row["better"][6] and "†" in row["better"][6]
    assert "† better, topical chat freq: 1 conversation: no test." in text  # the no_star reason, visible
    assert all("⚠ 100% unparseable" in cell for cell in row["unreadable"])
    assert all("0 [0, 0.22]" in cell for cell in row["unreadable"])
    assert not any("unparseable" in cell for name in data["runs"] if name != "unreadable" for cell in row[name])
    assert all("≠ prompts" in cell and "*" not in cell and "†" in cell for cell in row["chat-format"])
    assert "≠ prompts chat-format, every task: different prompts (chat format)." in text
    assert all("not compared" in cell and "Δ" not in cell for cell in row["other-docs"])
    assert not any("not compared" in cell for name in data["runs"] if name != "other-docs" for cell in row[name])
    assert all("Δ" not in cell and "best" not in cell for cell in row["base"])
    summary = re.search(r'<table class="summary">.*?</table>', html, re.S).group(0)
    assert summary.count('class="flag">⚠ 100% unparseable') == len(TASKS)
    assert summary.count('<td class="best"') == len(TASKS) - 1
    assert f"more than {render.UNPARSEABLE_FLAG:.0%} of the run" in text  # the legend says the threshold


def test_stars_are_the_report_s_verdict_and_p_alone_only_for_an_earlier_report():
    data = hostile_data()
    entry = data["tasks"]["qahub_limur"]
    entry["comparisons"]["extra0"]["exact_match"].update(p_holm=0.2, star=True)  # star, whatever p says
    entry["comparisons"]["extra1"]["exact_match"].update(p_holm=0.001, star=False, no_star=None)
    _, rows = _summary_rows(markdown(blocks(data, {})))
    cells = {name: next(r for r in rows if r.startswith(f"| {name};")).split(" | ")[6] for name in ("extra0", "extra1")}
    assert " *" in cells["extra0"] and "*" not in cells["extra1"] and cells["extra1"].endswith("Δ +0.20 †")
    # report.json of an earlier version (no star, best, caveats, not_compared): p_holm < alpha, and of two runs
    # the better one by a starred difference is the best
    old = {"settings": data["settings"], "runs": {n: data["runs"][n] for n in ("base", "better")}, "skipped": [],
           "tasks": {"t": {"main_metric": "m", "breakdown": {}, "notes": [], "scores": {
               "base": {"m": _cell(0.3, 0.1, 0.5)}, "better": {"m": _cell(0.8, 0.6, 1.0)}}, "warnings": [],
               "comparisons": {"better": {"m": _compared(0.5, 0.3, 0.7, 0.01)}}}}}
    _, rows = _summary_rows(markdown(blocks(old, {})))
    assert "Δ +0.50 * · best" in rows[1]
    old["tasks"]["t"]["comparisons"]["better"]["m"]["p_holm"] = 0.06
    _, rows = _summary_rows(markdown(blocks(old, {})))
    assert "*" not in rows[1] and "best" not in rows[1]
    old["tasks"]["t"]["warnings"] = ["better: no document in common with base; not compared"]
    old["tasks"]["t"]["comparisons"] = {}
    _, rows = _summary_rows(markdown(blocks(old, {})))
    assert "not compared" in rows[1]


def test_methods_come_after_the_tables_and_skipped_tasks_give_their_reasons(hostile):
    data, _, text, html = hostile
    assert text.index("| run |") < text.index("## Runs") < text.index("## Methods") < text.index("## qahub_")
    assert html.index('<table class="summary">') < html.index("<h2>Runs</h2>") < html.index("<h2>Methods</h2>")
    assert "Skipped: base: mmlu (not a qahub task); better: qahub_limur (no samples file)" in text
    # an earlier report's "RUN: TASK": a qahub group whose tasks are reported is not skipped, another task is
    assert render.skipped_text(["a: qahub_doc2dial", "a: mmlu"], data["tasks"]) == "Skipped: a: mmlu (not a qahub task)"
    assert "not qahub" not in render.skipped_text(["a: qahub_topical_chat"], data["tasks"])


def test_a_comparison_table_shows_units_the_star_and_why_not():
    data = hostile_data()
    entry = data["tasks"]["qahub_topical_chat_freq"]
    report = render.task_blocks("qahub_topical_chat_freq", entry, data["settings"], {})
    table = next(b for b in report if b[0] == "table" and b[1][2] == "delta [CI]")
    row = {r[0]: r for r in table[2]}
    assert row["better"][4] == "0.017 †" and row["better"][6] == "not estimable" and row["better"][7] == "20 (1 conversation)"
    assert row["better"][2] == "+0.03 (no interval)" or row["better"][2].endswith("(no interval)")
    assert ("p", "† better, f1: 1 conversation: no test") in report
    assert row["chat-format"][4] == "0.001 †"


@pytest.fixture
def drawn(monkeypatch):
    """The figures saved while the test runs, kept to measure (each savefig still writes)."""
    import matplotlib.figure

    found, save = [], matplotlib.figure.Figure.savefig

    def saving(figure, *args, **kwargs):
        save(figure, *args, **kwargs)
        found.append(figure)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", saving)
    return found


def _texts(figure):
    return [t for t in figure.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
            if t.get_text().strip()]


def test_figures_are_readable_at_1400_px_with_an_axis_from_the_data_and_cut_intervals_said(drawn):
    entry = {"main_metric": "m", "breakdown": {}, "scores": {
        "a": {"m": _cell(0.0, 0.0, 0.0)}, "b": {"m": _cell(0.0, 0.0, 0.0)}}}
    render.task_figures("t", entry, "a", limits=(0.0, 1.0))
    (figure,) = drawn
    assert figure.get_figwidth() * figure.dpi <= 1400
    assert all(t.get_fontsize() * figure.dpi / 72 >= 12 for t in _texts(figure))  # 12 px or more
    assert figure.axes[0].get_xlim()[1] - figure.axes[0].get_xlim()[0] >= 0.1  # not -0.04..0.04 around 0
    drawn.clear()
    entry["scores"] = {"a": {"m": _cell(0.80, 0.78, 0.83)}, "b": {"m": _cell(0.9, 0.7, 1.3)}}  # b beyond 1
    render.task_figures("t", entry, "a", limits=(0.0, 1.0))
    (figure,) = drawn
    low, high = figure.axes[0].get_xlim()
    assert 0.6 < low < 0.7 and 1.0 <= high < 1.05  # the data's span, the cut end at the range's 1
    assert any("cut at it" in t.get_text() for t in figure.texts)
    drawn.clear()
    entry["scores"]["b"]["m"]["ci"] = [0.7, 1.0000000000000002]  # float noise beyond the range: not a cut
    render.task_figures("t", entry, "a", limits=(0.0, 1.0))
    assert not any("cut" in t.get_text() for t in drawn[0].texts)


def test_a_task_s_metric_range_is_read_from_report_json_as_its_spec_declares_it():
    from qahub.report.build import new_entry
    from qahub.report.runs import qahub_tasks, task_metrics

    specs = qahub_tasks()

    def ranged(task, metric):  # the entry as report.json holds it: render needs no qahub.tasks
        entry = json.loads(json.dumps(new_entry(task, specs[task], task_metrics(specs[task]), [])))
        return render.metric_range(entry, metric)

    assert ranged("qahub_limur", "exact_match") == (0.0, 1.0)
    assert ranged("qahub_doc2dial_grounding", "exact") == (0.0, 100.0)
    assert ranged("qahub_doc2dial_response", "bleu") == (0.0, 100.0)
    assert ranged("qahub_jeopardy", "meteor") == (0.0, 1.0)  # declared in its TaskSpec.ranges
    assert ranged("qahub_topical_chat_freq", "distinct_2") == (0.0, 1.0)
    assert ranged("qahub_jeopardy", "game_score") == (None, None)  # a sum: unbounded
    assert render.metric_range({"main_metric": "m"}, "m") == (None, None)  # an earlier report.json


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="needs a Chromium (apt-get install chromium) to lay the page out")
def test_the_summary_fits_a_1400_px_window_without_a_horizontal_scrollbar(tmp_path):
    """Laid out by Chromium: a copy of the page with a script that writes the page's scroll width into it."""
    for data in (hostile_data(), hostile_data(runs=16)):
        for run in list(data["runs"])[6:]:
            data["runs"][run]["model"] = "x" * 90  # an unbroken model name
        width = scroll_width(data, tmp_path)
        assert width <= 1400, width


def scroll_width(data, folder) -> int:
    """The page's scroll width in a 1,400 px Chromium window."""
    return int(laid_out(page(blocks(data, {}), {}), folder, "document.documentElement.scrollWidth"))


def laid_out(html, folder, expression) -> str:
    """What the JavaScript ``expression`` gives on the page ``html`` laid out in a 1,400 x 900 Chromium window (a
    script writes it into the page, which Chromium then dumps)."""
    script = f"<script>document.body.setAttribute('data-found', String({expression}))</script></body>"
    (folder / "p.html").write_text(html.replace("</body>", script), encoding="utf-8")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={folder / 'profile'}", "--window-size=1400,900", "--dump-dom",
                           (folder / "p.html").as_uri()], capture_output=True, text=True, timeout=120)
    return re.search(r'data-found="([^"]*)"', done.stdout).group(1)


def test_the_first_screen_cells_are_built_from_a_copy_and_leave_the_data_as_it_was():
    data = hostile_data()
    before = copy.deepcopy(data)
    markdown(blocks(data, {}))
    assert data == before


def leaderboard_data(runs=100):
    """``hostile_data`` of ``runs`` runs with each task's ranking: the runs "extraN" by N, the others after."""
    data = hostile_data(runs=runs)
    for entry in data["tasks"].values():
        names = list(entry["scores"])
        entry["ranking"] = {"metric": entry["main_metric"], "reference": "base", "method": "a method",
                            "runs": {name: {"rank": i + 1, "ci": [max(1, i - 5), min(len(names) - 1, i + 7)],
                                            "value": entry["scores"][name][entry["main_metric"]]["value"]}
                                     for i, name in enumerate(names[6:] + names[:5])},
                            "not_ranked": {"other-docs": "other documents than base"}}
    return data


def test_a_leaderboard_of_100_runs_is_in_rank_order_with_runs_as_rows_and_a_small_page():
    data = leaderboard_data()
    text, html = markdown(blocks(data, {})), page(blocks(data, {}), {})
    _, rows = _summary_rows(text)
    assert len(rows) == 100 and rows[0].startswith("| extra0;") and rows[-1].startswith("| other-docs;")
    assert "rank 1 [1–7]" in rows[0] and "rank: the run's rank on the task [its 95% confidence set of ranks]" in text
    assert "the leaderboard view" in text
    breakdown = render.task_blocks("qahub_limur", {**data["tasks"]["qahub_limur"], "breakdown": {
        "task_type": {c: {name: {"exact_match": _cell(0.5, 0.3, 0.7)} for name in data["runs"]} for c in "abcd"}}},
        data["settings"], {})
    table = next(b for b in breakdown if b[0] == "table" and b[1][0] == "run" and b[1][1] == "a")
    assert table[1] == ["run", "a", "b", "c", "d"] and len(table[2]) == 100  # runs as rows, a column a category
    assert not any(b[0] == "p" and "underpowered" in b[1] for b in breakdown)  # the MDE column says it
    assert len(html.encode()) < 2_000_000


def test_a_leaderboard_s_figure_is_one_ranked_figure_readable_at_1400_px(drawn):
    data = leaderboard_data()
    entry = data["tasks"]["qahub_limur"]
    entry["breakdown"] = {"task_type": {c: {name: {"exact_match": _cell(0.5, 0.3, 0.7)} for name in data["runs"]}
                                        for c in "ab"}}
    images = render.task_figures("qahub_limur", entry, "base")
    assert list(images) == ["qahub_limur.png"] and len(images["qahub_limur.png"]) < 300_000
    (figure,) = drawn
    assert figure.get_figwidth() * figure.dpi <= 1400
    assert all(t.get_fontsize() * figure.dpi / 72 >= 12 for t in _texts(figure))
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert len(labels) == 100 and labels[0] == "better" and LONG[:20] in " ".join(labels)  # the best on top
    assert figure.get_figheight() * figure.dpi / 100 <= ROW_PX  # a row a run, no taller


ROW_PX = 25


@pytest.mark.skipif(CHROMIUM is None, reason="needs a Chromium (apt-get install chromium) to lay the page out")
def test_a_leaderboard_of_100_runs_fits_a_1400_px_window(tmp_path):
    assert scroll_width(leaderboard_data(), tmp_path) <= 1400
