import functools
import http.server
import os
import tempfile
import threading

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
    from qahub import harness, registry
    from qahub.export import export

    root = tmp_path_factory.mktemp("sample-exports")
    for corpus in harness.corpora():
        export(corpus, root / corpus, data_dir=registry.samples_dir(corpus), cache_dir=root / "cache", sample=True)
    return {corpus: root / corpus for corpus in harness.corpora()}
