"""``render`` makes every page from report.json alone (issue 44, item 4): a report written as ``qahub report`` writes
it (``first_screen.py``'s two runs: the numbers, a figure per task and breakdown, report.md, report.html), then
rendered again from its saved report.json in a fresh process, gives the same files byte for byte, without
importing ``qahub.tasks`` (nor any run reader): a report can be re-rendered where the corpora are not installed."""

import json
import os
import subprocess
import sys

import pytest
from first_screen import report_data

# run in a fresh interpreter: report.json in, every page out; which qahub modules it imported, and from where
# ``qahub.tasks`` was first imported (the file and function of each frame), if it was
RENDER = r"""
import json, sys, traceback
from pathlib import Path

seen = []


class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "qahub.tasks" and not seen:
            seen.append([(Path(f.filename).name, f.name) for f in traceback.extract_stack()])
        return None


sys.meta_path.insert(0, Watch())
from qahub.report.render import blocks, markdown, page, task_figures

folder = Path(sys.argv[1])
data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
figures = {task: task_figures(task, entry, data["settings"]["baseline"]) for task, entry in data["tasks"].items()}
report = blocks(data, {task: list(per_task) for task, per_task in figures.items()})
images = {name: png for per_task in figures.values() for name, png in per_task.items()}
same = {"report.md": markdown(report) == (folder / "report.md").read_text(encoding="utf-8"),
        "report.html": page(report, images) == (folder / "report.html").read_text(encoding="utf-8")}
same.update({f"figures/{name}": png == (folder / "figures" / name).read_bytes() for name, png in images.items()})
drawn = sorted(p.name for p in (folder / "figures").iterdir())
print(json.dumps({"same": same, "drawn": drawn, "tasks_imported_from": seen[0] if seen else None,
                  "modules": sorted(m for m in sys.modules if m.startswith("qahub"))}))
"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """A report folder written in this process (which knows the tasks), and what a fresh process rendered from
    its report.json alone."""
    from qahub.report import SCHEMA, write_folder
    from qahub.report.render import task_figures

    data = report_data()
    figures = {task: task_figures(task, entry, data["settings"]["baseline"]) for task, entry in data["tasks"].items()}
    out = tmp_path_factory.mktemp("saved") / "report"
    write_folder(out, {"schema": SCHEMA, **data}, figures)
    done = subprocess.run([sys.executable, "-c", RENDER, str(out)], capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg"}, cwd=out)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout), figures


def test_a_saved_report_json_renders_the_same_pages_and_figures_in_a_fresh_process(rendered):
    found, figures = rendered
    assert len(found["same"]) > 4 and found["drawn"] == sorted(n for per in figures.values() for n in per)
    assert all(found["same"].values()), {name: same for name, same in found["same"].items() if not same}
    # no run is read: neither a harness's reader nor the Hub's
    assert not {m for m in found["modules"] if m.split(".")[-1] in ("sources", "lm_eval_runs", "inspect_logs",
                                                                    "lighteval_runs", "hub_runs", "build")}
    assert found["tasks_imported_from"] is None, found["tasks_imported_from"]  # the metric ranges are in report.json


def test_rendering_a_saved_report_json_imports_no_task(rendered):
    found, _ = rendered
    assert "qahub.tasks" not in found["modules"], found["tasks_imported_from"]


def test_the_report_model_is_typed_frozen_and_its_json_is_report_json():
    """Issue 44 item 4: each task of a report is a frozen ``TaskReport`` of ``Cell``s and ``Comparison``s; its
    ``to_json`` is the task's report.json text, and ``from_json`` reads that text back to the same objects."""
    import dataclasses

    from qahub.report.model import Cell, Comparison, TaskReport

    data = report_data()
    for entry in data["tasks"].values():
        text = json.dumps(entry, indent=2, ensure_ascii=False, allow_nan=False)
        report = TaskReport.from_json(json.loads(text))
        assert json.dumps(report.to_json(), indent=2, ensure_ascii=False, allow_nan=False) == text
        scores = [c for per in report.scores.values() for c in per.values()]
        parts = [c for cats in report.breakdown.values() for runs in cats.values() for per in runs.values()
                 for c in per.values()]
        compared = [c for per in report.comparisons.values() for c in per.values()]
        assert scores and all(type(c) is Cell and c.signed for c in scores)  # a run's score carries its signature
        assert all(type(c) is Cell and not c.signed for c in parts)
        assert compared and all(type(c) is Comparison and c.paired_of for c in compared)
        assert report.ranges == entry["ranges"] and report.run_facts == entry["run_facts"]
        with pytest.raises(dataclasses.FrozenInstanceError):
            scores[0].value = 1.0
        with pytest.raises(dataclasses.FrozenInstanceError):
            report.best = "tiny-b"
    flat = [c for entry in data["tasks"].values() for per in entry["scores"].values() for c in per.values()
            if "n_effective" in c]
    assert flat and Cell.from_json(flat[0]).method.startswith("Clopper-Pearson")  # a flat cell's own method
    with pytest.raises(ValueError, match="not a task of a qahub report"):
        TaskReport.from_json({"scores": {}})
