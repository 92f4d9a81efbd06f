"""The metric directories share helper files, linked, and each still loads on its own, without qahub."""

import json
from pathlib import Path

import evaluate
import pytest
from test_module_boundaries import imported

from qahub import registry

ROOT = Path(__file__).resolve().parents[1]

SHARED = ("direct_metric.py", "task_spec.py")  # in metrics/_shared, linked into each metric directory


@pytest.mark.parametrize("helper", SHARED)
@pytest.mark.parametrize("name", registry.metric_names())
def test_each_metric_links_the_one_shared_helper(name, helper):
    path = registry.metric_dir(name) / helper
    assert path.is_symlink() and path.resolve() == (registry.metrics_root() / "_shared" / helper).resolve()


def test_gc_pause_is_the_core_s_and_a_metric_links_that_one_file():
    """``gc_paused`` is kept once, in the core (``qahub.gc_pause``, standard library only), which the loaders, the
    report and the training configs import; a metric directory using it links that file, so it still loads without
    qahub (below)."""
    core = ROOT / "src" / "qahub" / "gc_pause.py"
    links = [path for path in registry.metrics_root().glob("*/gc_pause.py")]
    assert links and all(path.is_symlink() and path.resolve() == core.resolve() for path in links)
    assert not (registry.metrics_root() / "_shared" / "gc_pause.py").exists()
    users = {path.relative_to(ROOT).as_posix() for folder in ("src", "loaders") for path in (ROOT / folder).rglob("*.py")
             if "gc_paused" in path.read_text(encoding="utf-8") and path.resolve() != core.resolve()}
    assert users == {"loaders/_rows.py", "src/qahub/report/__init__.py", "src/qahub/training.py"}
    for user in users:
        assert "qahub.gc_pause" in imported(ROOT / user), user
    assert imported(core) <= {"contextlib", "gc"}


@pytest.mark.parametrize("name", registry.metric_names())
def test_evaluate_loads_the_metric_not_the_shared_base(name, tmp_path):
    metric = evaluate.load(str(registry.metric_dir(name)), cache_dir=str(tmp_path))
    assert type(metric).__name__ != "DirectMetric"
    assert metric.info.citation.strip().startswith("@") and "predictions" in metric.info.features


@pytest.mark.parametrize("name", registry.metric_names())
def test_the_metric_directory_loads_without_qahub_with_its_task_specs(name, metric_alone):
    """What a copy of the directory (the Hub, ``qahub metric-copy``) gives: evaluate copies the modules the
    metric imports, the linked task_spec.py among them, and its TASKS are TaskSpecs of that copy (loaded in a
    process where qahub cannot be imported: tests/metric_alone.py)."""
    result = metric_alone(name)["task_specs"]
    assert result["ok"], result["error"][-2000:]
    kind, specs = json.loads(result["stdout"].splitlines()[-1])
    assert kind != "DirectMetric" and specs and not result["qahub_imports"]
    assert all(module.endswith(".task_spec") and not module.startswith("qahub") for module in specs.values()), specs
