import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

# keep the suite's caches out of the user's ~/.cache/huggingface (read when datasets is imported)
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="qahub-tests-hf-"))

import datasets  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

datasets.disable_progress_bars()

# CI runs the property tests on a fixed set of examples, so a run fails only for a change in the code;
# locally they draw new examples each run and keep the failing ones in .hypothesis/
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def handler_server():
    """``handler_server(handler_class) -> base URL``: a real HTTP server on 127.0.0.1 answering with that handler."""
    servers = []

    def start(handler):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def http_server(handler_server):
    """``http_server(root) -> base URL``: a real HTTP server on 127.0.0.1 serving the folder ``root``."""
    return lambda root: handler_server(functools.partial(_QuietHandler, directory=str(root)))


@pytest.fixture
def no_judge_env(monkeypatch):
    """No LLM judge configured from the environment (the LIMUR tests name theirs)."""
    for name in ("QAHUB_JUDGE_URL", "QAHUB_JUDGE_MODEL", "QAHUB_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _doc2dial_metric(subtask):
    import evaluate

    from qahub import registry

    return evaluate.load(str(registry.metric_dir("doc2dial")), subtask)


@pytest.fixture(scope="module")
def grounding():
    """The doc2dial metric's subtask1 (knowledge grounding)."""
    return _doc2dial_metric("subtask1")


@pytest.fixture(scope="module")
def generation():
    """The doc2dial metric's subtask2 (response generation)."""
    return _doc2dial_metric("subtask2")


@pytest.fixture(scope="session")
def sample_exports(tmp_path_factory):
    """``{corpus: folder}``: every corpus's bundled sample, exported once per session (copy one before damaging)."""
    from qahub import planning, registry
    from qahub.export.writer import export

    root = tmp_path_factory.mktemp("sample-exports")
    for corpus in planning.corpora():
        export(corpus, root / corpus, data_dir=registry.samples_dir(corpus), cache_dir=root / "cache", sample=True)
    return {corpus: root / corpus for corpus in planning.corpora()}



@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory, worker_id):
    """A folder of this run shared by all its xdist workers (each worker's basetemp is inside it); with ``-n 0``,
    the session's own basetemp."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if worker_id != "master" else base


@pytest.fixture(scope="session")
def metric_alone(shared_dir):
    """``metric_alone(metric) -> {check: {ok, error, stdout, qahub_imports}}``: every without-qahub check of one
    metric directory (tests/metric_alone.py), run once per test run in one fresh process, whichever test file
    and worker asks first; the others wait on its lock and read its results."""
    import metric_alone as checks
    from filelock import FileLock

    def results(metric):
        folder = shared_dir / "metric-alone" / metric
        folder.parent.mkdir(exist_ok=True)
        with FileLock(str(folder) + ".lock"):
            done = folder / "results.json"
            if not done.is_file():
                if folder.exists():  # a worker stopped half-way: start again
                    shutil.rmtree(folder)
                folder.mkdir()
                checks.run(metric, folder, dict(os.environ))
            return json.loads(done.read_text(encoding="utf-8"))

    return results


EEE_WHEEL = "every_eval_ever-0.3.0-py3-none-any.whl"


@pytest.fixture(scope="session")
def eee_schemas():
    """The aggregate and instance-level schemas inside the released every-eval-ever 0.3.0 wheel, fetched by
    install.sh into the cache (here again when the cache is empty); never copied into the repository."""
    cache = Path(os.environ.get("QAHUB_EEE_CACHE", Path.home() / ".cache" / "qahub" / "every-eval-ever"))
    wheel = cache / EEE_WHEEL
    if not wheel.is_file():
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--python-version", "3.12",
                               "--only-binary=:all:", "every-eval-ever==0.3.0", "-d", str(cache)],
                              capture_output=True, text=True)
        assert wheel.is_file(), f"could not fetch {EEE_WHEEL} (install.sh does): {done.stderr[-2000:]}"
    with zipfile.ZipFile(wheel) as archive:
        return {name: json.loads(archive.read(f"every_eval_ever/schemas/{name}.schema.json"))
                for name in ("eval", "instance_level_eval")}


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A 2-layer GPT-2 with random weights; its byte-level BPE tokenizer is trained here on a few lines, so any
    text (the JEMHopQA prompt is Japanese) encodes without unknown tokens. Nothing is downloaded."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    eos = "<|endoftext|>"
    trained = ByteLevelBPETokenizer()
    trained.train_from_iterator(["質問: 東京タワーの高さは？ 回答: 333メートル", "Ответ: Рим", "the answer is"],
                                vocab_size=320, min_frequency=1, special_tokens=[eos])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=trained, eos_token=eos, bos_token=eos, unk_token=eos,
                                        pad_token=eos)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=4096, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# `python -m pytest -m quick`: a subset of a few minutes that touches every corpus. Each corpus's own test files
# mark theirs (`@pytest.mark.quick`: a sample exported and loaded back, the metric's official or hand-worked
# numbers, `qahub evaluate` on the sample, its task's scoring); the shared tests below run every corpus's task
# folder through lm-eval and check the registry. The full suite stays the proof.
QUICK = (
    "tests/test_harness.py::test_oracle_scores_the_top_on_every_gold_matching_metric",
    "tests/test_metric_modules.py::test_evaluate_loads_the_metric_not_the_shared_base",
    "tests/test_one_declaration.py::test_each_task_declares_its_oracle_scores_and_its_binary_metrics_among_its_metrics",
    "tests/test_first_hour.py::test_list_prints_each_builders_configs_and_splits",
)


# The files that take longest (CI on 2 cores), longest first. xdist (--dist loadfile --no-loadscope-reorder, in
# pyproject.toml) hands files out in collection order: these start first, so no long file is the last one running
# while the other worker idles (by default xdist starts the files with most tests first, and test_real_models.py,
# one test of 4-5 minutes, came last). The other files follow, most tests first.
LONGEST_FIRST = (
    "tests/test_real_models.py",
    "tests/test_report.py",
    "tests/test_predictions.py",
    "tests/test_limur_judge.py",
    "tests/test_report_hub.py",
    "tests/test_suite_cli.py",
    "tests/test_report_inspect.py",
    "tests/test_harness_hf_model.py",
    "tests/test_inspect_tasks.py",
    "tests/test_lighteval_tasks.py",
)


def pytest_collection_modifyitems(items):
    """Marks the shared QUICK tests (a test id without its parameters marks each of its cases); orders the files
    for xdist (LONGEST_FIRST), keeping the order of the tests in each file."""
    for item in items:
        if item.nodeid.split("[")[0] in QUICK:
            item.add_marker(pytest.mark.quick)
    counts = {}
    for item in items:
        counts[item.nodeid.split("::")[0]] = counts.get(item.nodeid.split("::")[0], 0) + 1

    def rank(item):
        path = item.nodeid.split("::")[0]
        first = LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)
        return first, -counts[path], path

    items.sort(key=rank)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _share_lm_eval_builtin_index()


def _share_lm_eval_builtin_index():
    """Once lm-eval is imported, its index of its own ~10,000 task YAMLs is built once per process, not by every
    ``TaskManager()`` (7 s of CPU each; the suite makes dozens): ``TaskIndex.build`` indexes each folder on its
    own and merges them in order, so the index of lm-eval's unchanging folder is reused as built. Folders given
    by ``include_path`` (the tests' task folders) are read afresh each time."""
    index_module = sys.modules.get("lm_eval.tasks._index")
    if index_module is None or getattr(index_module.TaskIndex.build, "shared_builtin", False):
        return
    build, builtin, built = index_module.TaskIndex.build, Path(index_module.__file__).parent, {}

    def shared_build(paths, *, resolve_includes=True):
        index = {}
        for root in paths:
            if Path(root) == builtin:
                if resolve_includes not in built:
                    built[resolve_includes] = build([root], resolve_includes=resolve_includes)
                part = built[resolve_includes]
            else:
                part = build([root], resolve_includes=resolve_includes)
            for name, entry in part.items():
                if name in index:
                    index_module.log.warning("Task '%s' from %s overrides existing task from %s", name,
                                             entry.yaml_path, index[name].yaml_path)
                index[name] = entry
        return index

    shared_build.shared_builtin = True
    index_module.TaskIndex.build = staticmethod(shared_build)
