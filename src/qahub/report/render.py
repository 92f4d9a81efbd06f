"""report.md, report.html (self-contained: figures inline) and figures/*.png from the report's numbers."""

from __future__ import annotations

import base64
import html
import io


def fmt(value, digits=4):
    return "–" if value is None else f"{value:.{digits}g}"


def score_text(c):
    if c is None:
        return "–"
    lo, hi = c["ci"]
    return f"{fmt(c['value'])} [{fmt(lo)}, {fmt(hi)}]"


def blocks(data, figures) -> list:
    """The report as a list of blocks: ("h", level, text), ("p", text), ("table", header, rows), ("img", name)."""
    s = data["settings"]
    out = [("h", 1, "qahub report"), *summary_blocks(data),
           ("p", f"Baseline {s['baseline']}; {s['resamples']} resamples, seed {s['seed']}, {s['confidence']:.0%} "
                 "intervals: Wilson score intervals for 0/1 metrics whose documents are independent, half-samples "
                 "without replacement for distinct-n (a resample with replacement repeats documents and adds no "
                 "distinct n-grams), the percentile bootstrap for the rest; where a task declares a cluster "
                 "(Topical-Chat's conversation, doc2dial's dialogue, Jeopardy's theme) whole clusters are resampled, "
                 "the same for every run. Comparisons: McNemar's exact test for 0/1 metrics of independent "
                 "documents, sacrebleu's paired bootstrap for BLEU, a paired (cluster) bootstrap of the difference "
                 "for the others; p_holm (Holm) and p_bh (Benjamini-Hochberg) are adjusted over every comparison; "
                 f"* marks p_holm < {1 - s['confidence']:.2g}. MDE: the minimum difference detectable at "
                 f"{s.get('power', 0.8):.0%} power and alpha {1 - s['confidence']:.2g}, from the observed paired "
                 "variance (clustered where the task is)."),
           ("table", ["run", "model", "results file"],
            [[name, r["model"], r["results_file"]] for name, r in data["runs"].items()])]
    for task, entry in data["tasks"].items():
        out += task_blocks(task, entry, s, figures)
    if data["skipped"]:
        out.append(("p", "Skipped: " + ", ".join(f"{s['run']}: {s['task']} ({s['reason']})" for s in data["skipped"])))
    return out


def summary_blocks(data) -> list:
    """The first screen: a row per run, a column per task's main metric (score [interval]; * where it differs
    from the baseline after Holm's adjustment, "underpowered" where the difference is below the detectable
    one), then each run's two categories weakest against the baseline."""
    s, tasks = data["settings"], data["tasks"]
    alpha, base = 1 - s["confidence"], s["baseline"]
    rows = []
    for name in data["runs"]:
        row = [f"{name} (baseline)" if name == base else name]
        for entry in tasks.values():
            main = entry["main_metric"]
            text = score_text(entry["scores"].get(name, {}).get(main))
            compared = entry["comparisons"].get(name, {}).get(main)
            if compared and compared["p_holm"] is not None and compared["p_holm"] < alpha:
                text += " *"
            if compared and compared.get("underpowered"):
                text += " (underpowered)"
            row.append(text)
        rows.append(row)
    header = ["run", *(f"{task}: {entry['main_metric']}" for task, entry in tasks.items())]
    out = [("table", header, rows),
           ("p", f"* differs from {base} (p_holm < {alpha:.2g}); underpowered: the difference is below the "
                 "minimum detectable one (see each task).")]
    for name in data["runs"]:
        if name != base and (weak := weakest(data, name)):
            out.append(("p", f"{name}, weakest against {base}: " + "; ".join(weak)))
    return out


def weakest(data, name, count=2) -> list:
    """The ``count`` categories (over every task's breakdowns) where ``name``'s main metric is furthest below the
    baseline's, as text."""
    base, gaps = data["settings"]["baseline"], []
    for task, entry in data["tasks"].items():
        main = entry["main_metric"]
        for field, cats in entry["breakdown"].items():
            for cat, per_run in cats.items():
                mine, theirs = (per_run.get(run, {}).get(main, {}).get("value") for run in (name, base))
                if mine is not None and theirs is not None and mine < theirs:
                    gaps.append(((mine - theirs) / max(abs(theirs), 1e-12), task, field, cat, mine, theirs, main))
    return [f"{task} {field}={cat}: {main} {fmt(mine)} against {fmt(theirs)}"
            for _, task, field, cat, mine, theirs, main in sorted(gaps, key=lambda g: g[0])[:count]]


def task_blocks(task, entry, settings, figures):
    out = [("h", 2, task)]
    out += [("p", f"Warning: {w}") for w in entry["warnings"]] + [("p", n) for n in entry["notes"]]
    metrics = list(dict.fromkeys(m for scores in entry["scores"].values() for m in scores if m != "unparseable"))
    rows = [[name] + [score_text(scores.get(m)) for m in metrics] + [score_text(scores.get("unparseable")),
                                                                       str(max(c["n"] for c in scores.values()))]
            for name, scores in entry["scores"].items()]
    out.append(("table", ["run", *metrics, "unparseable", "n"], rows))
    if entry.get("intervals"):
        out.append(("p", "Intervals: " + "; ".join(f"{m}: {how}" for m, how in entry["intervals"].items())))
    out += [("img", name) for name in figures.get(task, [])[:1]]
    main = entry["main_metric"]
    for field, cats in entry["breakdown"].items():
        out.append(("h", 3, f"{task} by {field} ({main}; unparseable)"))
        names = list(entry["scores"])
        rows = [[cat] + [_cat_text(per_run.get(name), main) for name in names] for cat, per_run in cats.items()]
        out.append(("table", [field, *names], rows))
        out += [("img", name) for name in figures.get(task, []) if name.endswith(f"_{field}.png")]
    if any(entry["comparisons"].values()):
        out.append(("h", 3, f"{task}: paired comparisons with {settings['baseline']}"))
        rows = [[name, m, f"{fmt(c['delta'])} [{fmt(c['ci'][0])}, {fmt(c['ci'][1])}]", fmt(c["p"], 3),
                 fmt(c["p_holm"], 3) + (" *" if (c["p_holm"] or 1) < 1 - settings["confidence"] else ""),
                 fmt(c.get("p_bh"), 3), fmt(c.get("mde"), 3) + (" (underpowered)" if c.get("underpowered") else ""),
                 str(c["n"]), c["test"]]
                for name, per in entry["comparisons"].items() for m, c in per.items()]
        out.append(("table", ["run", "metric", "delta [CI]", "p", "p_holm", "p_bh", "MDE", "n", "test"], rows))
        out += [("p", f"{name}, {m}: {c['underpowered']}") for name, per in entry["comparisons"].items()
                for m, c in per.items() if c.get("underpowered")]
    return out


def _cat_text(scores, main):
    if not scores or main not in scores:
        return "–"
    text = f"{score_text(scores[main])} n={scores[main]['n']}"
    return text + (f"; {fmt(scores['unparseable']['value'])}" if "unparseable" in scores else "")


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


def page(blocks_, images: dict) -> str:
    """One HTML file: no script, no stylesheet or image fetched from anywhere (figures are data: URIs)."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>qahub report</title>',
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left}img{max-width:48em}</style>",
             "</head><body>"]
    for block in blocks_:
        if block[0] == "h":
            parts.append(f"<h{block[1]}>{e(block[2])}</h{block[1]}>")
        elif block[0] == "p":
            parts.append(f"<p>{e(block[1])}</p>")
        elif block[0] == "img":
            data = base64.b64encode(images[block[1]]).decode("ascii")
            parts.append(f'<p><img alt="{e(block[1])}" src="data:image/png;base64,{data}"></p>')
        else:
            head = "".join(f"<th>{e(str(x))}</th>" for x in block[1])
            body = "".join("<tr>" + "".join(f"<td>{e(str(x))}</td>" for x in row) + "</tr>" for row in block[2])
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def task_figures(task, entry, baseline=None) -> dict:
    """``{file name: PNG bytes}`` of a task: dot-and-interval (forest) plots of the main metric, each run's score
    with its interval, the baseline's interval shaded, 0 marked; per breakdown field, one row group per
    category."""
    import matplotlib

    matplotlib.use("Agg")
    main = entry["main_metric"]
    cells = {run: scores[main] for run, scores in entry["scores"].items() if main in scores}
    images = {f"{task}.png": _forest(f"{task}: {main}", ["all"], {run: [c] for run, c in cells.items()}, baseline)}
    for field, cats in entry["breakdown"].items():
        series = {run: [cats[cat].get(run, {}).get(main) for cat in cats] for run in entry["scores"]}
        images[f"{task}_{field}.png"] = _forest(f"{task}: {main} by {field}", list(cats), series, baseline)
    return images


def _forest(title, labels, series, baseline) -> bytes:
    import matplotlib.pyplot as plt

    legend = 0.5 + 0.07 * max([len(str(run)) for run in series] or [0])  # inches beside the plot for the run names
    label_in = 0.3 + 0.07 * max([len(str(label)) for label in labels] or [0])
    width_in, height_in = 11.0 + legend + label_in, max(2.0, 0.9 + 0.28 * len(labels) * max(1, len(series)))
    with plt.rc_context({"text.parse_math": False}):  # run names and categories as given: "$x$" is not TeX
        fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=100)  # about 1400 px wide
        _draw(ax, title, labels, series, baseline)
        # fixed margins: tight_layout is slow
        fig.subplots_adjust(left=label_in / width_in, right=1 - legend / width_in, top=1 - 0.45 / height_in,
                            bottom=0.45 / height_in)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _draw(ax, title, labels, series, baseline):
    """A row per run within a group per label: the score as a dot, its interval as a line; the baseline's
    interval shaded across its group; a line at 0."""
    step = 1.0 / (len(series) + 1)
    handles = []
    for i, (run, cells) in enumerate(series.items()):
        for row, c in enumerate(cells):
            if not c or c["value"] is None:
                continue
            y = row + (i + 1) * step
            low, high = c["ci"]
            if low is not None:
                ax.plot([low, high], [y, y], color=f"C{i}", linewidth=2)
                if run == baseline:
                    ax.axvspan(low, high, ymin=1 - (row + 1) / len(labels), ymax=1 - row / len(labels),
                               color=f"C{i}", alpha=0.15, linewidth=0)
        values = [(row + (i + 1) * step, c["value"]) for row, c in enumerate(cells) if c and c["value"] is not None]
        handles.append(ax.scatter([v for _, v in values], [y for y, _ in values], color=f"C{i}", zorder=3, s=24))
    ax.axvline(0, color="black", linewidth=0.8)  # a score of 0 is a dot on this line, not an invisible bar
    ax.set_ylim(len(labels), 0)
    ax.set_yticks([row + 0.5 for row in range(len(labels))], [str(label) for label in labels])
    ax.grid(axis="x", linewidth=0.3)
    ax.set_title(title, fontsize=10, y=1.0)  # a fixed place: placing it above the ticks measures them
    # the legend beside the plot; the names given with the handles, as they are: a label= starting with "_"
    # would be left out of the legend
    ax.legend(handles, [str(run) for run in series], fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
