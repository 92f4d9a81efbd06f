"""The metric directories share one helper file, linked, and each still loads on its own."""

import evaluate
import pytest

from qahub import registry

SHARED = registry.metrics_root() / "_shared" / "direct_metric.py"


@pytest.mark.parametrize("name", registry.metric_names())
def test_each_metric_links_the_one_shared_helper(name):
    helper = registry.metric_dir(name) / "direct_metric.py"
    assert helper.is_symlink() and helper.resolve() == SHARED.resolve()


@pytest.mark.parametrize("name", registry.metric_names())
def test_evaluate_loads_the_metric_not_the_shared_base(name, tmp_path):
    metric = evaluate.load(str(registry.metric_dir(name)), cache_dir=str(tmp_path))
    assert type(metric).__name__ != "DirectMetric"
    assert metric.info.citation.strip().startswith("@") and "predictions" in metric.info.features
