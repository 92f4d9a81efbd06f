"""The contract ``qahub.lighteval_tasks.custom_tasks_only`` keeps with lighteval's real ``Registry`` (the release
pyproject.toml pins): it replaces the static ``Registry.load_all_task_configs``, which ``Registry.__init__`` calls
with ``custom_tasks=`` and ``load_multilingual=``, by one that gives what lighteval's own gives for the custom
tasks, without importing lighteval's built-in task modules (two of which fail here), and puts the original back."""

import importlib.metadata
import inspect
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import tomllib

pytest.importorskip("lighteval", reason="lighteval is the [lighteval] extra")

from lighteval.tasks.registry import Registry  # noqa: E402

from qahub import lighteval_tasks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASK = "qahub_limur"


@pytest.fixture
def limur_data(sample_exports, monkeypatch):
    value = f"limur={sample_exports['limur']}"
    monkeypatch.setenv(lighteval_tasks.ENV, value)
    lighteval_tasks._tasks_table.cache_clear()
    yield value
    lighteval_tasks._tasks_table.cache_clear()


def test_lighteval_is_the_pinned_release_the_patch_was_written_for():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    pinned = [r for r in extras["lighteval"] if r.startswith("lighteval")]
    assert pinned == [f"lighteval=={importlib.metadata.version('lighteval')}"] == ["lighteval==0.13.0"]


def test_the_replaced_method_is_static_and_takes_the_keywords_the_registry_passes():
    original = Registry.__dict__["load_all_task_configs"]
    assert isinstance(original, staticmethod)
    assert list(inspect.signature(original.__func__).parameters) == ["custom_tasks", "load_multilingual"]
    with lighteval_tasks.custom_tasks_only():
        patched = Registry.__dict__["load_all_task_configs"]
        assert isinstance(patched, staticmethod)
        assert list(inspect.signature(patched.__func__).parameters) == ["custom_tasks", "load_multilingual"]


def test_the_patch_gives_what_lighteval_gives_for_the_custom_tasks_alone(limur_data, monkeypatch):
    """lighteval's own loader with its built-in task modules left out (its two loaders of them give nothing)
    returns the configs the patched loader returns, for a module and for the module's name."""
    with lighteval_tasks.custom_tasks_only():
        patched = {source: Registry.load_all_task_configs(custom_tasks=source)
                   for source in ("qahub.lighteval_tasks", lighteval_tasks)}
        assert Registry.load_all_task_configs() == {}
    monkeypatch.setattr(Registry, "_load_from_files", staticmethod(lambda files, prefix: {}))
    monkeypatch.setattr(Registry, "_load_from_subdirs", staticmethod(lambda subdirs: {}))
    for source, configs in patched.items():
        own = Registry.load_all_task_configs(custom_tasks=source)
        assert list(own) == list(configs) and TASK in own
        assert all(own[name] is configs[name] for name in own)  # the same configs: TASKS_TABLE is cached


def test_the_original_is_put_back_also_after_an_error():
    original = Registry.__dict__["load_all_task_configs"]
    with pytest.raises(RuntimeError), lighteval_tasks.custom_tasks_only():
        assert Registry.__dict__["load_all_task_configs"] is not original
        raise RuntimeError
    assert Registry.__dict__["load_all_task_configs"] is original


REGISTRY = """
import json, sys
from lighteval.tasks.registry import Registry
from qahub import lighteval_tasks
with lighteval_tasks.custom_tasks_only():
    registry = Registry(tasks=sys.argv[1] + "|0", custom_tasks="qahub.lighteval_tasks")
print(json.dumps([sorted(registry.task_to_configs), sorted(registry._task_registry),
                  sorted(m for m in sys.modules if m.startswith("lighteval.tasks.tasks."))]))
"""


def test_a_registry_built_under_the_patch_holds_the_custom_tasks_and_imports_no_built_in_task(limur_data):
    done = subprocess.run([sys.executable, "-c", REGISTRY, TASK], capture_output=True, text=True, timeout=600,
                          env={**os.environ, lighteval_tasks.ENV: limur_data})
    assert done.returncode == 0, done.stderr[-2000:]
    selected, registered, built_in = json.loads(done.stdout.splitlines()[-1])
    assert selected == [TASK] and TASK in registered
    assert registered == sorted(config.name for config in lighteval_tasks.tasks_table(limur_data))
    assert built_in == []


def test_a_module_without_a_tasks_table_gives_no_task_as_lighteval_s_own_does():
    empty = types.ModuleType("no_tasks")
    with lighteval_tasks.custom_tasks_only():
        assert Registry.load_all_task_configs(custom_tasks=empty) == {}
