"""report.md, report.html (self-contained: figures inline) and figures/*.png from the report's numbers."""

from __future__ import annotations

import base64
import html
import io
import math
import textwrap
from dataclasses import dataclass

from .stats import MIN_UNITS

UNPARSEABLE_FLAG = 0.2  # a run whose share of unreadable replies is above this is flagged on the first screen:
# its score then says more about the reply format than about the answers
NOISE = 1e-9  # a number closer to 0 than this is floating-point noise (1.388e-17 from summed zeros): shown as 0
LABEL = 24  # the summary's column heads are at most this many characters (the full name is in the legend)
LEADERBOARD = 20  # more runs than this: the leaderboard view (runs in ranking order with their ranks, breakdowns
# with runs as rows, one ranked figure a task); the numbers are the same, report.json holds all of them


@dataclass(frozen=True)
class Cell:
    """A table cell with more than one line: Markdown joins ``parts`` with "; ", HTML shows one line each (the
    first as the value, the others smaller, ``flags`` in red); ``title`` is the HTML tooltip."""

    parts: tuple = ()
    flags: tuple = ()
    title: str = ""
    best: bool = False

    def __str__(self):
        return "; ".join(p for p in (*self.parts, *self.flags) if p)


# numbers


def _clean(x):
    return 0.0 if abs(x) < NOISE else x


def places(low, high):
    """The decimal places an interval supports: down to its width's leading digit and one more (0.73 wide: 2
    places, 50 wide: 0); None where it has no width (a point, or no interval)."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    width = _clean(high - low)
    return None if width <= 0 else max(0, 1 - math.floor(math.log10(width)))


def number(x, digits=None, sign=False) -> str:
    """``x`` at ``digits`` decimal places (None: 4 significant digits); noise and -0 shown as 0."""
    if x is None or not math.isfinite(x):
        return "–"
    x = _clean(x)
    plus = "+" if sign else ""
    text = f"{x:{plus}.{digits}f}" if digits is not None else f"{x:{plus}.4g}"
    return "0" if float(text) == 0 else text


def score_text(c) -> str:
    """A score's ``value [low, high]``, each rounded to what the interval supports."""
    return "–" if c is None else interval_text(c.get("value"), c["ci"])


def delta_text(c) -> str:
    """A comparison's difference and its interval: ``+0.67 [0.50, 1.00]``."""
    return interval_text(c.get("delta"), c["ci"], sign=True)


def interval_text(value, ci, sign=False) -> str:
    if value is None:
        return "–"
    low, high = ci
    if low is None or high is None:
        return f"{number(value, sign=sign)} (no interval)"
    digits = places(low, high)
    return f"{number(value, digits, sign)} [{number(low, digits)}, {number(high, digits)}]"


def p_text(p) -> str:
    return "–" if p is None else "<0.0001" if p < 1e-4 else f"{p:.2g}"


def mde_text(c) -> str:
    if c.get("mde") is None:
        return c.get("mde_note") or "–"
    return number(c["mde"], places(*c["ci"]))


# what a comparison says


def starred(c, alpha) -> bool:
    """The report's verdict (``star``); a report.json of an earlier version has none: p_holm < alpha."""
    if "star" in c:
        return bool(c["star"])
    return c.get("p_holm") is not None and c["p_holm"] < alpha


def no_star(c, alpha):
    """Why a difference with p_holm < alpha has no star, or None."""
    if c.get("p_holm") is None or c["p_holm"] >= alpha or starred(c, alpha):
        return None
    return c.get("no_star") or "not starred"


def not_compared(name, entry):
    """Why ``name`` is not compared with the baseline on this task (``entry["not_compared"]``; an earlier
    report's warning saying so), or None."""
    if "not_compared" in entry:
        return entry["not_compared"].get(name)
    return next((w.split(": ", 1)[1] for w in entry.get("warnings", [])
                 if w.startswith(f"{name}: ") and "not compared" in w), None)


def caveat_mark(reasons) -> str:
    """A short mark for the reasons a pair is not like with like: "≠ prompts", "≠ shots", "≠ setup"; "? prompts"
    when the only reason is prompts a harness did not record ("prompts not recorded by lighteval: not
    compared"): not known, never marked as different."""
    text = " ".join(reasons)
    if "different prompts" in text:
        return "≠ prompts"
    if "shot" in text:
        return "≠ shots"
    unknown = all(r.startswith("prompts ") and r.endswith(": not compared") for r in reasons)
    return "? prompts" if unknown else "≠ setup"


def short_label(task) -> str:
    """A task's column head: without the ``qahub_`` prefix, words apart ("doc2dial grounding")."""
    label = (task[len("qahub_"):] if task.startswith("qahub_") else task).replace("_", " ")
    return label if len(label) <= LABEL else label[:LABEL - 1] + "…"


def plural(count, word) -> str:
    return f"{count} {word}" + ("" if count == 1 else "es" if word.endswith(("s", "x", "ch")) else "s")


# the report as blocks


def blocks(data, figures) -> list:
    """The report as a list of blocks: ("h", level, text), ("p", text), ("table", header, rows[, kind]),
    ("img", name). The summary comes first; the runs, then the methods, after it; then each task."""
    out = [("h", 1, "qahub report"), *summary_blocks(data), ("h", 2, "Runs"),
           ("table", ["run", "harness", "model", "results file"],
            [[name, r.get("harness", "–"), r.get("model", "–"), r.get("results_file", "–")]
             for name, r in data["runs"].items()]),
           *facts_blocks(data), ("h", 2, "Methods"), ("p", methods(data["settings"]))]
    for task, entry in data["tasks"].items():
        out += task_blocks(task, entry, data["settings"], figures)
    if data["skipped"]:
        out.append(("p", skipped_text(data["skipped"], data["tasks"])))
    return out


FACTS = ["dataset", "config", "split", "shots", "prompts", "documents"]  # the run table's columns after the runs
NAMES = 6  # a run table row names at most this many runs (then "and N more")


def facts_blocks(data) -> list:
    """The run table: what each run of each task read and how (report.json's ``run_facts``), a row per task and
    group of runs that read alike; a cell that differs from the baseline's marked "≠" (its value on hover).
    Nothing for a report that records no facts (an earlier report)."""
    base, rows = data["settings"]["baseline"], []
    for task, entry in data["tasks"].items():
        facts = entry.get("run_facts") or {}
        groups = {}
        for name, f in facts.items():
            groups.setdefault(fact_texts(f), []).append(name)
        if not groups:
            continue
        reference = fact_texts(facts[base]) if base in facts else next(iter(groups))
        for texts, names in groups.items():
            cells = [text if text == theirs else Cell((), (f"≠ {text}",), title=f"{base}: {theirs}")
                     for text, theirs in zip(texts, reference)]
            rows.append([short_label(task), names_text(names, base), *cells])
    if not rows:
        return []
    marked = any(isinstance(cell, Cell) for row in rows for cell in row)
    return [("h", 3, "What each run read"), ("table", ["task", "runs", *FACTS], rows)] + \
        [("p", f"≠: not what {base} read on the task (hover for {base}'s).")] * marked


def fact_texts(f) -> tuple:
    """A run's ``run_facts`` of a task as the run table's cells (``FACTS``)."""
    unknown = "not recorded"
    limit = f.get("limit")
    how = "" if limit is None else f" (--max-samples {limit}, drawn at random)" if f.get("harness") == "lighteval" \
        else f" (--limit {limit}, the first {limit})" if f.get("harness") == "lm-eval" else f" (--limit {limit})"
    return (str(f.get("dataset") or unknown), str(f.get("config") or "default"), str(f.get("split") or unknown),
            unknown if f.get("n_shot") is None else str(f["n_shot"]), str(f.get("prompt_format") or unknown),
            f"{f.get('documents', '–')}{how}")


def names_text(names, base) -> str:
    shown = [f"{name} (baseline)" if name == base else name for name in names]
    return ", ".join(shown) if len(shown) <= NAMES else ", ".join(shown[:NAMES - 1]) + \
        f" and {len(shown) - NAMES + 1} more"


def methods(s) -> str:
    alpha = 1 - s["confidence"]
    return (f"Baseline {s['baseline']}; {s['resamples']} resamples, seed {s['seed']}, {s['confidence']:.0%} "
            "intervals: Wilson score intervals for 0/1 metrics whose documents are independent, half-samples "
            "without replacement for distinct-n (a resample with replacement repeats documents and adds no "
            "distinct n-grams), the percentile bootstrap for the rest; where a task declares a cluster "
            "(Topical-Chat's conversation, doc2dial's dialogue, Jeopardy's theme) whole clusters are resampled, "
            "the same for every run. Comparisons: McNemar's exact test for 0/1 metrics of independent "
            "documents, sacrebleu's paired bootstrap for BLEU, a paired (cluster) test of the difference "
            "for the others (each task's table names it); p_holm (Holm) and p_bh (Benjamini-Hochberg) are "
            f"adjusted over every comparison; * marks p_holm < {alpha:.2g} where the comparison may be starred "
            "(† where it may not, with the reason). MDE: the minimum difference detectable at "
            f"{s.get('power', 0.8):.0%} power and alpha {alpha:.2g}, from the observed paired variance (clustered "
            "where the task is). Numbers are rounded to two significant digits of their interval's width.")


def skipped_text(skipped, tasks) -> str:
    """The runs' tasks left out, with why; ``skipped`` as ``{"run", "task", "reason"}`` (or an earlier report's
    "RUN: TASK", a task that is not qahub's: a qahub group whose member tasks are reported is not skipped)."""
    lines = []
    for item in skipped:
        if isinstance(item, dict):
            lines.append(f"{item.get('run', '?')}: {item.get('task', '?')} ({item.get('reason', 'no reason given')})")
            continue
        run, _, task = str(item).partition(": ")
        if not any(reported.startswith(f"{task}_") for reported in tasks):  # a group of reported tasks is not
            lines.append(f"{run}: {task} (not a qahub task)")
    return "Skipped: " + "; ".join(lines) if lines else "Skipped: none (qahub groups are reported by task)"


def summary_blocks(data) -> list:
    """The first screen: a row per run (its harness and model under its name), a column per task's main metric
    (score [interval]; against the baseline Δ with * where it differs; the task's best run; flags for a mostly
    unparseable run, a comparison with a caveat and a run not compared), a legend of the columns and the marks,
    then each run's two categories weakest against the baseline."""
    s, tasks = data["settings"], data["tasks"]
    alpha, base = 1 - s["confidence"], s["baseline"]
    reasons = {}
    header = ["run", *(Cell((short_label(task), entry["main_metric"]), title=f"{task}: {entry['main_metric']}")
                       for task, entry in tasks.items())]
    many = len(data["runs"]) > LEADERBOARD
    names = leaderboard_order(data) if many else list(data["runs"])
    rows = [[run_cell(name, data["runs"][name], base)] +
            [summary_cell(name, task, entry, base, alpha, reasons, ranked=many) for task, entry in tasks.items()]
            for name in names]
    out = [("table", header, rows, "summary"),
           ("p", "Columns: " + "; ".join(f"{short_label(task)} = {task} ({entry['main_metric']})"
                                         for task, entry in tasks.items()) + "."),
           ("p", marks_legend(rows, base, alpha))]
    if many:
        out.append(("p", f"{len(names)} runs: the leaderboard view. Rows in order of each run's mean rank over the "
                         "tasks that rank runs, every one of which ranks it (an order for reading, not a test; the others, "
                         "unranked, last); in each cell its rank on the task "
                         "and the confidence set of that rank (each task's ranking says how it is made)."))
        out += [("p", f"Unranked: {name}, {why}.") for name, why in (data.get("leaderboard") or {}).get(
            "unranked", {}).items()]
    out += [("p", line) for line in reason_lines(reasons, len(tasks))]
    for name in data["runs"]:
        if name != base and (weak := weakest(data, name)):
            out.append(("p", f"{name}, weakest against {base}: " + "; ".join(weak)))
    return out


def reason_lines(reasons, every) -> list:
    """A line per mark and reason (read, not skimmed), naming the runs and tasks it holds for: ``reasons`` as
    ``{(mark, run, reason): [task labels]}``; runs with the same reason on the same tasks share a line."""
    runs = {}
    for (mark, name, why), labels in reasons.items():
        runs.setdefault((mark, why, tuple(labels)), []).append(name)
    return [f"{mark} {names_text(names, None)}, {_tasks_text(list(labels), every)}: {why}."
            for (mark, why, labels), names in runs.items()]


def run_cell(name, run, base) -> Cell:
    label = f"{name} (baseline)" if name == base else name
    return Cell((label, f"{run.get('harness', '–')} · {run.get('model', '–')}"),
                title=f"{name}: {run.get('path', '')}")


def leaderboard_order(data) -> list:
    """The runs by their mean rank over the tasks' rankings, as report.json's ``leaderboard`` orders them (the
    unranked ones last, as given); an earlier report.json: by their mean rank over the tasks they are ranked on."""
    board = data.get("leaderboard")
    if board is not None:
        return board["order"] + [name for name in data["runs"] if name not in board["order"]]
    ranks = {}
    for entry in data["tasks"].values():
        for name, r in ((entry.get("ranking") or {}).get("runs") or {}).items():
            ranks.setdefault(name, []).append(r["rank"])
    order = list(data["runs"])
    return sorted(order, key=lambda name: (name not in ranks, sum(ranks.get(name, [0])) / len(ranks.get(name, [0])),
                                           order.index(name)))


def rank_text(r) -> str:
    """``3 [1–7]``: a run's rank and its confidence set."""
    low, high = r["ci"]
    return f"{r['rank']} [{low}–{high}]"


def summary_cell(name, task, entry, base, alpha, reasons, ranked=False) -> Cell:
    """A run's main score on a task, with the marks the legend explains (and with ``ranked``, its rank on the task
    and the rank's confidence set); the reasons behind †, ≠ and "no interval" go to ``reasons`` (``{(mark, run,
    reason): [task labels]}``), shown under the summary."""
    main, label = entry["main_metric"], short_label(task)
    scores = entry["scores"].get(name, {})
    if main not in scores:
        return Cell(("–",), title=f"{name} did not run {task}")
    note = lambda mark, why: reasons.setdefault((mark, name, why), []).append(label)  # noqa: E731
    parts, title = score_parts(name, entry, scores[main], note)
    title.insert(0, f"{task}: {main} of {name}")
    rank = ((entry.get("ranking") or {}).get("runs") or {}).get(name)
    if ranked and rank:
        parts.append(f"rank {rank_text(rank)}")
    c = entry["comparisons"].get(name, {}).get(main)
    best = entry.get("best", best_of_two(entry, base, alpha)) == name
    if c is not None:
        parts.append(" · ".join(comparison_marks(c, alpha, best)))
        title += comparison_title(c)
        if no_star(c, alpha):
            note("†", no_star(c, alpha))
            title.append(f"† {no_star(c, alpha)}")
        if c.get("p") is None and c.get("test"):
            note("no test possible", c["test"])
    elif best:
        parts.append("best")
    flags = cell_flags(name, entry, scores, c, base, note, title)
    return Cell(tuple(parts), tuple(flags), "\n".join(title), best=best)


def score_parts(name, entry, cell, note) -> tuple:
    """(the lines of a score: its text, then "≈ 3 dialogues" where its interval stands on fewer independent units
    than a star needs (it is approximate); its tooltip lines). A score with no interval gives its reason to
    ``note`` (a footnote under the summary) and to the tooltip."""
    text = score_text(cell)
    if cell.get("value") is not None and None in cell["ci"]:
        why = no_interval_reason(cell)
        note("(no interval)", why)
        return [text], [f"no interval: {why}"]
    count, word = score_units(name, entry, cell)
    if cell.get("value") is None or count >= MIN_UNITS:
        return [text], []
    return [text, f"≈ {plural(count, word)}"], [f"approximate: an interval from {plural(count, word)}, fewer than "
                                                f"the {MIN_UNITS} a star needs"]


def no_interval_reason(c) -> str:
    """Why a score or comparison has no interval, as report.json says it (``no_interval``)."""
    return c.get("no_interval") or c.get("no_interval_reason") or "the report does not say why (an earlier report)"


def score_units(name, entry, cell) -> tuple:
    """(count, word) of the independent units a score stands on: its own ``units`` where report.json records them,
    else its run's clusters of the task (where the task resamples by cluster), else its documents."""
    units = cell.get("units")
    if isinstance(units, list | tuple) and len(units) == 2:
        return int(units[0]), str(units[1])
    cluster = entry.get("cluster") or {}
    count = ((cluster.get("runs") or {}).get(name) or {}).get("clusters")
    word = cluster.get("field") if count is not None and cluster.get("field") else None  # resampled by cluster
    if isinstance(units, int):
        return units, word or "document"
    return (count, word) if word else (cell.get("n", 0), "document")


def comparison_title(c) -> list:
    """The tooltip lines of a comparison: its Δ and interval (or why it has none), p_holm and test, and whether
    its test can detect a difference."""
    lines = [f"Δ {delta_text(c)}, p_holm {p_text(c.get('p_holm'))} ({c.get('test', '')})"]
    if c.get("delta") is not None and None in c["ci"]:
        lines.append(f"Δ no interval: {no_interval_reason(c)}")
    if c.get("underpowered"):
        lines.append(c["underpowered"])
    return lines


def cell_flags(name, entry, scores, c, base, note, title) -> list:
    """The red marks of a summary cell: a mostly unparseable run, fewer documents paired than the runs scored, a
    pair not like with like, a run not compared (each reason to ``note`` or the tooltip ``title``)."""
    flags = []
    share = scores.get("unparseable", {}).get("value")
    if share is not None and share > UNPARSEABLE_FLAG:
        flags.append(f"⚠ {share:.0%} unparseable")
        title.append(f"{share:.0%} of the replies could not be read (flagged above {UNPARSEABLE_FLAG:.0%})")
    if c is not None and (fewer := paired_fewer(name, entry, c, base)):
        flags.append(fewer[0])
        note("≠ documents", fewer[1])
        title.append(f"≠ documents: {fewer[1]}")
    if caveats := entry.get("caveats", {}).get(name):
        flags.append(caveat_mark(caveats))
        note(caveat_mark(caveats), "; ".join(caveats))
        title.append(f"{caveat_mark(caveats)}: {'; '.join(caveats)}")
    if name != base and (why := not_compared(name, entry)):
        flags.append("not compared")
        title.append(f"not compared: {why}")
    return flags


def paired_fewer(name, entry, c, base):
    """("≠ documents: 2 of 20 paired", why) where the comparison stands on fewer documents than a run scored
    (``paired_of``; an earlier report: the two scores' n), else None. Why: the task's note on the pairing."""
    main = entry["main_metric"]
    of = c.get("paired_of") or {"baseline": entry["scores"].get(base, {}).get(main, {}).get("n", 0),
                                "run": entry["scores"].get(name, {}).get(main, {}).get("n", 0)}
    most = max(of.values())
    if c.get("n") is None or c["n"] >= most:
        return None
    said = next((n.split(": ", 1)[1] for n in entry.get("notes", []) if n.startswith(f"{name} vs {base}: ")), None)
    why = said or f"paired on the {c['n']} documents both scored ({base} {of['baseline']}, {name} {of['run']})"
    return f"≠ documents: {c['n']} of {most} paired", why


def comparison_marks(c, alpha, best) -> list:
    """``Δ +0.5 *`` (or ``†``), then "best", "underpowered" where they apply."""
    delta = number(c["delta"], places(*c["ci"]), sign=True) if c.get("delta") is not None else "–"
    marks = [f"Δ {delta}" + (" *" if starred(c, alpha) else " †" if no_star(c, alpha) else "")]
    if best:
        marks.append("best")
    if c.get("delta") is not None and c.get("p") is None:  # too few units for any test: say so, not a bare Δ
        marks.append("no test possible")
    elif not starred(c, alpha) and (c.get("underpowered") or (c.get("mde") is None and not no_star(c, alpha))):
        marks.append("underpowered")  # no MDE: nothing says what the test could detect (an earlier report)
    return marks


def _tasks_text(labels, every):
    return "every task" if len(labels) == every > 1 else ", ".join(labels)


def best_of_two(entry, base, alpha):
    """An earlier report has no ``best``: with two runs, the one better by a starred difference, else None."""
    if len(entry["scores"]) != 2 or len(entry["comparisons"]) != 1:
        return None
    name, per = next(iter(entry["comparisons"].items()))
    c = per.get(entry["main_metric"])
    if c is None or c["delta"] is None or not starred(c, alpha):
        return None
    return name if c["delta"] > 0 else base


def marks_legend(rows, base, alpha) -> str:
    """What each mark used in the summary means (those used only)."""
    used = " ".join(str(cell) for row in rows for cell in row[1:])
    legend = [f"score [{1 - alpha:.0%} interval]"]
    for mark, seen, meaning in (
            ("Δ", ("Δ",), f"the run minus {base} on the documents both scored, * where it differs (p_holm < "
                          f"{alpha:.2g}, Holm over every comparison), none where no difference is shown"),
            ("†", ("†",), f"p_holm < {alpha:.2g} but no star (the reason below)"),
            ("underpowered", ("underpowered",), "the test cannot detect a difference this small (below the "
                                                "minimum detectable one, or none can be significant with these "
                                                "documents): a Δ near 0 does not mean the runs are equal"),
            ("no test possible", ("no test possible",), "too few independent units for any test (the reason below)"),
            ("≈ N", ("≈",), f"the interval stands on fewer than {MIN_UNITS} independent units (documents, or "
                            "clusters where a task resamples whole clusters): approximate"),
            ("(no interval)", ("(no interval)",), "no interval can be given (the reason below; hover for it)"),
            ("best", ("best",), "beats every other run of the task significantly"),
            ("rank", ("rank",), f"the run's rank on the task [its {1 - alpha:.0%} confidence set of ranks]"),
            ("unparseable", ("unparseable",), f"more than {UNPARSEABLE_FLAG:.0%} of the run's replies could not be "
                                              "read: the score says more about the reply format than about the "
                                              "answers"),
            ("≠ documents", ("≠ documents",), "the Δ stands on fewer documents than the runs scored (the scores "
                                              "are not on the same documents; the reason below)"),
            ("≠", ("≠ prompts", "≠ shots", "≠ setup"), "compared with a caveat (not like with like: the reason "
                                                        "below), never starred"),
            ("? prompts", ("? prompts",), "compared, but a harness did not record the prompts it sent, or not "
                                          "as the other did, so they could not be compared (the reason below): "
                                          "never starred"),
            ("not compared", ("not compared",), f"no comparison with {base} (the task's section says why)")):
        if any(text in used for text in seen):
            legend.append(f"{mark}: {meaning}")
    return "; ".join(legend) + "."


def weakest(data, name, count=2) -> list:
    """The ``count`` categories (over every task's breakdowns) where ``name``'s main metric is furthest below the
    baseline's, as text; only categories where both scores have an interval from at least ``MIN_UNITS``
    documents (fewer say nothing about a category), each number rounded to what its interval supports."""
    base, gaps = data["settings"]["baseline"], []
    for task, entry in data["tasks"].items():
        main = entry["main_metric"]
        for field, cats in entry["breakdown"].items():
            for cat, per_run in cats.items():
                mine, theirs = (per_run.get(run, {}).get(main) for run in (name, base))
                if enough(mine) and enough(theirs) and mine["value"] < theirs["value"]:
                    gap = (mine["value"] - theirs["value"]) / max(abs(theirs["value"]), 1e-12)
                    gaps.append((gap, task, field, cat, mine, theirs, main))
    return [f"{task} {field}={cat}: {main} {score_text(mine)} against {score_text(theirs)} (n={mine['n']})"
            for _, task, field, cat, mine, theirs, main in sorted(gaps, key=lambda g: g[0])[:count]]


def enough(c) -> bool:
    """Whether a category's score says something: a value and an interval from at least ``MIN_UNITS`` units
    (its ``units`` where recorded, else its documents)."""
    if not c or c.get("value") is None or None in c["ci"]:
        return False
    units = c.get("units", c.get("n", 0))
    return (units[0] if isinstance(units, list | tuple) else units) >= MIN_UNITS


def task_blocks(task, entry, settings, figures):
    """A task's section: what it warns and notes, its scores, intervals and ranking, its figure, its breakdowns and
    its paired comparisons with the baseline."""
    out = [("h", 2, task)]
    out += [("p", f"Warning: {w}") for w in entry["warnings"]] + [("p", n) for n in entry["notes"]]
    if entry.get("best"):
        out.append(("p", f"Best: {entry['best']} (beats every other run of the task significantly on "
                         f"{entry['main_metric']})."))
    out += [("p", f"{caveat_mark(reasons)} {name} against {settings['baseline']}: {'; '.join(reasons)}")
            for name, reasons in entry.get("caveats", {}).items() if reasons]
    out += [("p", f"Not compared: {name}: {why}") for name, why in entry.get("not_compared", {}).items()]
    metrics = list(dict.fromkeys(m for scores in entry["scores"].values() for m in scores if m != "unparseable"))
    rows = [[name] + [score_text(scores.get(m)) for m in metrics] + [score_text(scores.get("unparseable")),
                                                                       str(max(c["n"] for c in scores.values()))]
            for name, scores in entry["scores"].items()]
    out.append(("table", ["run", *metrics, "unparseable", "n"], rows))
    if entry.get("intervals"):
        out.append(("p", "Intervals: " + interval_methods(entry["intervals"])))
    out += ranking_blocks(task, entry)
    out += [("img", name) for name in figures.get(task, [])[:1]]
    return out + breakdown_blocks(task, entry, figures) + comparison_blocks(task, entry, settings)


def breakdown_blocks(task, entry, figures) -> list:
    """A table (and figure) a breakdown field: a row a category, a column a run (runs as rows when many)."""
    main, out = entry["main_metric"], []
    many, names = len(entry["scores"]) > LEADERBOARD, list(entry["scores"])
    for field, cats in entry["breakdown"].items():
        out.append(("h", 3, f"{task} by {field} ({main}; unparseable)"))
        if many:  # runs as rows: a column a category
            rows = [[name] + [_cat_text(per_run.get(name), main) for per_run in cats.values()] for name in names]
            out.append(("table", ["run", *cats], rows))
        else:
            rows = [[cat] + [_cat_text(per_run.get(name), main) for name in names] for cat, per_run in cats.items()]
            out.append(("table", [field, *names], rows))
        out += [("img", name) for name in figures.get(task, []) if name.endswith(f"_{field}.png")]
    return out


def comparison_blocks(task, entry, settings) -> list:
    """The task's paired comparisons with the baseline: a row a run and metric, then why a comparison is
    underpowered (few runs) and why a p below alpha has no star."""
    if not any(entry["comparisons"].values()):
        return []
    alpha, unit = 1 - settings["confidence"], (entry.get("cluster") or {}).get("field")
    every = [(name, m, c) for name, per in entry["comparisons"].items() for m, c in per.items()]
    rows = [[name, m, delta_text(c), p_text(c["p"]),
             p_text(c["p_holm"]) + (" *" if starred(c, alpha) else " †" if no_star(c, alpha) else ""),
             p_text(c.get("p_bh")), mde_text(c) + (" (underpowered)" if c.get("underpowered") else ""),
             units_text(c, unit), c["test"]] for name, m, c in every]
    out = [("h", 3, f"{task}: paired comparisons with {settings['baseline']}"),
           ("table", ["run", "metric", "delta [CI]", "p", "p_holm", "p_bh", "MDE", "n", "test"], rows)]
    if len(entry["scores"]) <= LEADERBOARD:  # many runs: the table's MDE column says "(underpowered)"
        out += [("p", f"{name}, {m}: {c['underpowered']}") for name, m, c in every if c.get("underpowered")]
    return out + [("p", f"† {name}, {m}: {no_star(c, alpha)}") for name, m, c in every if no_star(c, alpha)]


def interval_methods(methods: dict) -> str:
    """``exact, f1: how; bleu: how``: the metrics whose intervals are made alike named together, each method once."""
    grouped = {}
    for m, how in methods.items():
        grouped.setdefault(how, []).append(m)
    return "; ".join(f"{', '.join(names)}: {how}" for how, names in grouped.items())


def ranking_blocks(task, entry) -> list:
    """The task's ranking (``entry["ranking"]``): a row per run ranked, best first, and the runs not ranked with
    why; nothing where there is no ranking (fewer than three runs)."""
    r = entry.get("ranking")
    if not r:
        return []
    main, out = r["metric"], [("h", 3, f"{task}: ranking on {r['metric']}")]
    if r["runs"]:
        rows = [[rank_text(rank), name, score_text(entry["scores"][name].get(main))] for name, rank in r["runs"].items()]
        out.append(("table", ["rank [set]", "run", main], rows))
    out.append(("p", f"Ranking: {r.get('note') or 'rank 1 the best; [set]: ' + r['method']}."))
    if r["not_ranked"]:
        out.append(("p", f"Not ranked with {r['reference']} (the runs ranked together share its documents and "
                         "resamples): " + "; ".join(f"{name} ({why})" for name, why in r["not_ranked"].items())))
    return out


def units_text(c, unit) -> str:
    """The documents compared, and the independent units where they are fewer ("20 (1 conversation)")."""
    units = c.get("units")
    if units is None or units == c["n"]:
        return str(c["n"])
    return f"{c['n']} ({plural(units, unit or 'unit')})"


def _cat_text(scores, main):
    if not scores or main not in scores:
        return "–"
    text = f"{score_text(scores[main])} n={scores[main]['n']}"
    return text + (f"; {score_text(scores['unparseable'])}" if "unparseable" in scores else "")


# the two pages


def markdown(blocks_) -> str:
    lines = []
    for block in blocks_:
        if block[0] == "h":
            lines += ["#" * block[1] + " " + block[2], ""]
        elif block[0] == "p":
            lines += [block[1], ""]
        elif block[0] == "img":
            lines += [f"![{block[1]}](figures/{block[1]})", ""]
        else:
            header, rows = block[1], block[2]
            cell = lambda x: str(x).replace("|", "\\|").replace("\n", " ")  # noqa: E731
            lines += ["| " + " | ".join(map(cell, header)) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows] + [""]
    return "\n".join(lines)


STYLE = ("body{font-family:sans-serif;font-size:15px;margin:1.5em}table{border-collapse:collapse;margin:1em 0;"
         "max-width:100%}td,th{border:1px solid #bbb;padding:.2em .45em;text-align:left;vertical-align:top}"
         "td{overflow-wrap:anywhere}img{max-width:100%}table.summary{font-size:14px}table.summary td+td .v{white-space:"
         "nowrap}.sub{display:block;font-size:13px;color:#444}.flag{display:block;font-size:13px;color:#b00000;"
         "font-weight:bold}td.best{background:#e3f2e1}th .sub{font-weight:normal}")


def page(blocks_, images: dict) -> str:
    """One HTML file: no script, no stylesheet or image fetched from anywhere (figures are data: URIs)."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>qahub report</title>',
             f"<style>{STYLE}</style>", "</head><body>"]
    for block in blocks_:
        if block[0] == "h":
            parts.append(f"<h{block[1]}>{e(block[2])}</h{block[1]}>")
        elif block[0] == "p":
            parts.append(f"<p>{e(block[1])}</p>")
        elif block[0] == "img":
            data = base64.b64encode(images[block[1]]).decode("ascii")
            parts.append(f'<p><img alt="{e(block[1])}" src="data:image/png;base64,{data}"></p>')
        else:
            kind = f' class="{block[3]}"' if len(block) > 3 else ""
            head = "".join(_html_cell("th", x) for x in block[1])
            body = "".join("<tr>" + "".join(_html_cell("td", x) for x in row) + "</tr>" for row in block[2])
            parts.append(f"<table{kind}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_cell(tag, x) -> str:
    e = html.escape
    if not isinstance(x, Cell):
        return f"<{tag}>{e(str(x))}</{tag}>"
    first, *rest = x.parts or ("",)
    inner = f'<span class="v">{e(first)}</span>' + "".join(f'<span class="sub">{e(p)}</span>' for p in rest)
    inner += "".join(f'<span class="flag">{e(f)}</span>' for f in x.flags)
    title = f' title="{e(x.title)}"' if x.title else ""
    best = ' class="best"' if x.best else ""
    return f"<{tag}{best}{title}>{inner}</{tag}>"


# the figures


def task_figures(task, entry, baseline=None, limits=None) -> dict:
    """``{file name: PNG bytes}`` of a task: dot-and-interval (forest) plots of the main metric, each run's score
    with its interval, the baseline's interval shaded; per breakdown field, one row group per category. The axis
    spans the data; an interval beyond the metric's range (``limits``, else the task's own, where known) is cut
    at it, and the figure says so."""
    import matplotlib

    matplotlib.use("Agg")
    main = entry["main_metric"]
    limits = metric_range(entry, main) if limits is None else limits
    cells = {run: scores[main] for run, scores in entry["scores"].items() if main in scores}
    if len(entry["scores"]) > LEADERBOARD:  # one figure, runs as rows, by score: a legend of 100 runs is unreadable
        return {f"{task}.png": _ladder(f"{task}: {main}", cells, baseline, limits)}
    images = {f"{task}.png": _forest(f"{task}: {main}", ["all"], {run: [c] for run, c in cells.items()}, baseline,
                                     limits)}
    for field, cats in entry["breakdown"].items():
        series = {run: [cats[cat].get(run, {}).get(main) for cat in cats] for run in entry["scores"]}
        images[f"{task}_{field}.png"] = _forest(f"{task}: {main} by {field}", list(cats), series, baseline, limits)
    return images


def metric_range(entry, metric):
    """(low, high) a task's metric lies in, as report.json records it (``ranges``: the task's declaration,
    ``TaskSpec.range_of``); (None, None) where unknown or unbounded (a sum), or in an earlier report.json."""
    bounds = (entry.get("ranges") or {}).get(metric)
    return (float(bounds[0]), float(bounds[1])) if bounds else (None, None)


NAME = 32  # a run name longer than this is wrapped in a figure's legend
FONT = 11  # points: 15 px at the figures' 100 dpi, shown at their size (max-width 100 % of a 1,400 px page)


def _forest(title, labels, series, baseline, limits=(None, None)) -> bytes:
    import matplotlib.pyplot as plt

    legend = 0.6 + 0.085 * max([min(len(str(run)), NAME) for run in series] or [0])  # inches for the names
    label_in = 0.4 + 0.085 * max([len(str(label)) for label in labels] or [0])
    rows = len(labels) * max(1, len(series))
    width_in, height_in = max(12.5, 6 + legend + label_in), max(2.4, 1.4 + 0.32 * rows)
    with plt.rc_context({"text.parse_math": False, "font.size": FONT}):  # names as given: "$x$" is not TeX
        fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=100)  # about 1,250 px wide
        clipped = _draw(ax, title, labels, series, baseline, limits)
        bottom = 0.55 + 0.3 * bool(clipped)
        if clipped:
            fig.text(0.01, 0.1 / height_in, clipped, fontsize=FONT, color="#b00000")
        # fixed margins: tight_layout is slow
        fig.subplots_adjust(left=label_in / width_in, right=1 - legend / width_in, top=1 - 0.5 / height_in,
                            bottom=bottom / height_in)
        png = _png(fig)
    plt.close(fig)
    return png


ROW = 0.2  # inches a run's row takes in the leaderboard figure (20 px: one line of its 15 px name)


def _ladder(title, cells, baseline, limits=(None, None)) -> bytes:
    """Every run's score and interval as a row, best on top (by value), its name beside it; the baseline in black
    with its interval shaded down the figure. Intervals beyond the metric's range are cut at it, as ``_draw`` does."""
    import matplotlib.pyplot as plt

    shown = sorted(((c["value"], run, c["ci"]) for run, c in cells.items() if c and c["value"] is not None),
                   key=lambda item: -item[0])
    label_in = 0.4 + 0.085 * max([min(len(str(run)), 2 * NAME) for _, run, _ in shown] or [0])
    width_in, height_in = 12.5, max(2.4, 1.2 + ROW * len(shown))
    with plt.rc_context({"text.parse_math": False, "font.size": FONT}):
        fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=100)
        colors = ["black" if run == baseline else "C0" for _, run, _ in shown]
        lines, ends, cut = [], [], False  # one call for every line, one for every dot: 100 calls each are slow
        for y, (_, run, (low, high)) in enumerate(shown):
            if low is not None and high is not None:
                a, b, beyond = _clipped(low, high, limits)
                cut = cut or any(beyond)
                lines.append((y, a, b, colors[y]))
                ends += [a, b]
                if run == baseline:
                    ax.axvspan(a, b, color="black", alpha=0.08, linewidth=0)
        if lines:
            ys, lows, highs, line_colors = zip(*lines)
            ax.hlines(ys, lows, highs, colors=line_colors, linewidth=1.5)
        ax.scatter([v for v, _, _ in shown], range(len(shown)), color=colors, s=16, zorder=3)
        ax.set_xlim(*axis_span([v for v, _, _ in shown] + ends, limits))
        ax.set_ylim(len(shown) - 0.5, -0.5)
        names = [(run if len(str(run)) <= 2 * NAME else str(run)[:2 * NAME - 1] + "…") +
                 (" (baseline)" if run == baseline else "") for _, run, _ in shown]
        ax.set_yticks(range(len(shown)), names)
        ax.grid(axis="x", linewidth=0.3)
        ax.set_title(title, fontsize=FONT + 2)
        if cut:
            fig.text(0.01, 0.1 / height_in, f"an interval reaching beyond the metric's range ({number(limits[0])} to "
                     f"{number(limits[1])}) is cut at it", fontsize=FONT, color="#b00000")
        fig.subplots_adjust(left=min(0.45, (label_in + 1.2) / width_in), right=0.97, top=1 - 0.5 / height_in,
                            bottom=(0.55 + 0.3 * cut) / height_in)
        png = _png(fig)
    plt.close(fig)
    return png


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})  # no matplotlib version: the same bytes
    return buffer.getvalue()


def _draw(ax, title, labels, series, baseline, limits):
    """A row per run within a group per label: the score as a dot, its interval as a line (cut at the metric's
    range, with an arrow at the cut end); the baseline's interval shaded across its group; a line at 0 where 0
    is on the axis. The sentence saying which intervals were cut, or ""."""
    step = 1.0 / (len(series) + 1)
    handles, shown, cut = [], [], False
    for i, (run, cells) in enumerate(series.items()):
        values = [(row, row + (i + 1) * step, c) for row, c in enumerate(cells) if c and c["value"] is not None]
        for row, y, c in values:
            shown.append(c["value"])
            ends = _interval_line(ax, y, c["ci"], f"C{i}", limits)
            if ends is None:
                continue
            shown, cut = shown + list(ends[:2]), cut or ends[2]
            if run == baseline:
                ax.axvspan(*ends[:2], ymin=1 - (row + 1) / len(labels), ymax=1 - row / len(labels), color=f"C{i}",
                           alpha=0.15, linewidth=0)
        handles.append(ax.scatter([c["value"] for _, _, c in values], [y for _, y, _ in values], color=f"C{i}",
                                  zorder=3, s=36))
    ax.set_xlim(*axis_span(shown, limits))
    left, right = ax.get_xlim()
    if left <= 0 <= right:
        ax.axvline(0, color="black", linewidth=0.8)  # a score of 0 is a dot on this line, not an invisible bar
    ax.set_ylim(len(labels), 0)
    ax.set_yticks([row + 0.5 for row in range(len(labels))], [str(label) for label in labels])
    ax.grid(axis="x", linewidth=0.3)
    ax.set_title(title, fontsize=FONT + 2, y=1.0)  # a fixed place: placing it above the ticks measures them
    # the legend beside the plot; the names given with the handles, as they are: a label= starting with "_"
    # would be left out of the legend
    names = ["\n".join(textwrap.wrap(str(run), NAME, break_on_hyphens=False)) if len(str(run)) > NAME else str(run)
             for run in series]  # a long name over lines, not over the plot
    ax.legend(handles, names, fontsize=FONT, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if not cut:
        return ""
    return (f"◂ ▸ an interval reaching beyond the metric's range ({number(limits[0])} to {number(limits[1])}) "
            "is cut at it")


def _interval_line(ax, y, ci, color, limits):
    """An interval drawn as a line at ``y``, cut at the metric's range with an arrow at a cut end: (its drawn
    ends, whether one was cut), or None where there is no interval."""
    low, high = ci
    if low is None or high is None:
        return None
    a, b, beyond = _clipped(low, high, limits)
    ax.plot([a, b], [y, y], color=color, linewidth=2.5)
    for edge, cut, marker in ((a, beyond[0], "<"), (b, beyond[1], ">")):
        if cut:
            ax.plot([edge], [y], marker=marker, color=color, markersize=9)
    return a, b, any(beyond)


def _clipped(low, high, limits):
    """(low, high) cut at the metric's range ``limits``, and whether each end was beyond it by more than float
    noise (a resampled BLEU of 100.00000000000001 is 100)."""
    low_limit, high_limit = limits
    a = max(low, low_limit) if low_limit is not None else low
    b = min(high, high_limit) if high_limit is not None else high
    return a, b, (a - low > NOISE, high - b > NOISE)


def axis_span(shown, limits) -> tuple:
    """The x axis: the values and interval ends shown, with a margin of 5 % (kept inside the metric's range
    where the data is); a single point gets a tenth of the range (or of its size) either side."""
    low_limit, high_limit = limits
    if not shown:
        return (low_limit or 0.0, high_limit or 1.0)
    low, high = min(shown), max(shown)
    if high - low < NOISE:
        known = (high_limit - low_limit) if low_limit is not None and high_limit is not None else None
        pad = 0.1 * (known or max(abs(low), 1.0))
    else:
        pad = 0.05 * (high - low)
    low, high = low - pad, high + pad
    if low_limit is not None and min(shown) >= low_limit:
        low = max(low, low_limit - 0.02 * (high - low))
    if high_limit is not None and max(shown) <= high_limit:
        high = min(high, high_limit + 0.02 * (high - low))
    return low, high
