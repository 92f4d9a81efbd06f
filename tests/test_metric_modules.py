"""The metric directories share helper files, linked, and each still loads on its own, without qahub."""

import json
import os
import subprocess
import sys

import evaluate
import pytest

from qahub import registry

SHARED = ("direct_metric.py", "task_spec.py")  # in metrics/_shared, linked into each metric directory


@pytest.mark.parametrize("helper", SHARED)
@pytest.mark.parametrize("name", registry.metric_names())
def test_each_metric_links_the_one_shared_helper(name, helper):
    path = registry.metric_dir(name) / helper
    assert path.is_symlink() and path.resolve() == (registry.metrics_root() / "_shared" / helper).resolve()


@pytest.mark.parametrize("name", registry.metric_names())
def test_evaluate_loads_the_metric_not_the_shared_base(name, tmp_path):
    metric = evaluate.load(str(registry.metric_dir(name)), cache_dir=str(tmp_path))
    assert type(metric).__name__ != "DirectMetric"
    assert metric.info.citation.strip().startswith("@") and "predictions" in metric.info.features


LOAD_WITHOUT_QAHUB = """
import json, sys
sys.modules["qahub"] = None  # `import qahub` fails: the metric directory must do without it
import evaluate
metric = evaluate.load(sys.argv[1], cache_dir=sys.argv[2])
tasks = sys.modules[type(metric).__module__].TASKS
print(json.dumps([type(metric).__name__, {name: type(spec).__module__ for name, spec in tasks.items()}]))
"""


@pytest.mark.parametrize("name", registry.metric_names())
def test_the_metric_directory_loads_without_qahub_with_its_task_specs(name, tmp_path):
    """What a copy of the directory (the Hub, ``qahub metric-copy``) gives: evaluate copies the modules the
    metric imports, the linked task_spec.py among them, and its TASKS are TaskSpecs of that copy."""
    env = {**os.environ, "HF_MODULES_CACHE": str(tmp_path / "modules")}
    done = subprocess.run([sys.executable, "-c", LOAD_WITHOUT_QAHUB, str(registry.metric_dir(name)),
                           str(tmp_path / "cache")], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kind, specs = json.loads(done.stdout.splitlines()[-1])
    assert kind != "DirectMetric" and specs
    assert all(module.endswith(".task_spec") and not module.startswith("qahub") for module in specs.values()), specs
