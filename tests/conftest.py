import functools
import http.server
import json
import os
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


def pytest_collection_modifyitems(items):
    """Marks the shared QUICK tests (a test id without its parameters marks each of its cases)."""
    for item in items:
        if item.nodeid.split("[")[0] in QUICK:
            item.add_marker(pytest.mark.quick)
