"""The LIMUR judge reports what it did and judges as MERA does: a fake OpenAI-compatible judge on 127.0.0.1
answering in prose, through the metric's ``compute``, the installed ``qahub evaluate limur`` and lm-eval's own
machinery (a ``qahub harness-tasks --judge`` folder)."""

import base64
import functools
import gzip
import http.server
import importlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
import tracemalloc

import evaluate
import hostile
import pytest

from qahub import cli, registry

SAMPLES = registry.samples_dir("limur")
KEY = "sk-judge-5e4d3c2b1a-SECRET"
pytestmark = pytest.mark.usefixtures("no_judge_env")

# Judge replies in prose and MERA's grade of each, worked out from MERA's code: compute_llm_judge
# (artemorloff/lm-evaluation-harness, lm_eval/api/metrics_generative.py) takes
# float(re.findall(r"(\d+(?:\.\d+)?)", content)[-1]) and raises when there is no number; mera_judge.py
# (MERA-Evaluation/MERA 4310d98) divides by 2 and clamps to [0, 1] (normalize_score), and scores a raised error 0.
# None: no number, a failed judgement (0, counted as no grade).
MERA_REPLIES = [
    ("Оценка: 2. Ответ совпадает с эталоном.", 1.0, "one number: 2 / 2"),
    ("1", 0.5, "a bare 1"),
    ("0", 0.0, "a bare 0"),
    ("Score 1.5/2", 1.0, "the LAST number is the scale's 2, not the 1.5"),
    ("Оценка 1 из 2", 1.0, "«из 2»: the last number again"),
    ("Критерий 2 выполнен частично. Оценка: 1", 0.5, "a number in the text, the grade last"),
    ("Оценка: 0. Ответ противоречит эталону (вариант 2 вместо 3).", 1.0, "3 is last: 3 / 2 clamped to 1"),
    ("Ответ неверный, оценка — ноль.", None, "no digit at all"),
    ("", None, "an empty reply"),
    ("2 — ответ верный и полный", 1.0, "a leading grade and prose"),
    ("1,5", 1.0, "a comma is no decimal point: 1 and 5, the last 5 / 2 clamped"),
    ("-1", 0.5, "no sign in the pattern: 1"),
    ("Итоговая оценка: 2.0.", 1.0, "2.0, the final period not part of it"),
    ("0.5", 0.25, "a decimal taken as is"),
    (".5", 1.0, "no leading digit: just 5"),
    ("3", 1.0, "off the scale, clamped"),
    ("Оценка: 10/10", 1.0, "10 / 2 clamped"),
    ("**Оценка:** 1\n\nОбоснование: ответ неполный.", 0.5, "markdown around the grade"),
    ("Оценка — ٢", 1.0, "an Arabic-Indic two is a digit to Python's \\d and float()"),
    ("Score: 2\n\nReasoning: 0 errors", 0.0, "the last number wins even when it is not the grade"),
]


def mera_grade(content):
    """MERA's own reading, copied here only as the oracle: compute_llm_judge's parse, then normalize_score."""
    floats = re.findall(r"(\d+(?:\.\d+)?)", content)
    if not floats:
        return None  # compute_llm_judge raises ValueError; compute_judge_score scores it 0.0
    raw = float(floats[-1])
    return min(max(float(raw) / 2.0, 0.0), 1.0)


def _judge_module():
    import importlib

    return importlib.import_module("qahub.metrics.limur.judge")


JUDGE = _judge_module()
PRECEDENCE = "--judge-* flags (compute's judge_* keywords) > $QAHUB_JUDGE_* > $LM_EVAL_JUDGE_*"  # as documented


@pytest.mark.parametrize("reply, grade, why", MERA_REPLIES, ids=[row[2] for row in MERA_REPLIES])
def test_the_table_is_meras_reading(reply, grade, why):
    assert mera_grade(reply) == grade, why
    assert JUDGE.grade_parser("mera")(reply) == grade, why
    assert JUDGE.MERA_MAX_TOKENS == 256


class ProseJudge:
    """What an OpenAI-compatible judge on 127.0.0.1 (ProseHandler) was asked, and how long it takes to answer."""

    def __init__(self, delay=0.0):
        self.lock = threading.Lock()
        self.bodies, self.paths, self.auths = [], [], []
        self.delay = delay
        self.inflight = self.max_inflight = 0
        self.url = None


@functools.lru_cache(maxsize=2)
def gzip_bomb(twice):
    """64 MiB of zeros gzipped (about 64 KB), or gzipped twice (a few hundred bytes)."""
    inner = gzip.compress(b"0" * (64 << 20), 9)
    return gzip.compress(inner, 9) if twice else inner


def _escaped(text):
    return "".join(f"\\u{ord(c):04x}" for c in text)


class ProseHandler(http.server.BaseHTTPRequestHandler):
    """The answer under evaluation «R<i>» gets MERA_REPLIES[i]'s reply; «ECHO» gets the Authorization header back
    in the reply (plain and JSON-escaped), «ECHO-500» a 500 whose body holds it JSON-escaped, «GZIP-BOMB» /
    «GZIP-TWICE» a gzip-encoded body inflating far past 1 MiB."""

    judge = None  # the ProseJudge of a subclass

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.judge
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            server.bodies.append(body)
            server.paths.append(self.path)
            server.auths.append(self.headers.get("Authorization"))
            server.inflight += 1
            server.max_inflight = max(server.max_inflight, server.inflight)
        try:
            time.sleep(server.delay)
            user = body["messages"][-1]["content"]
            marker = "### Ответ для оценки:\n" if "### Ответ для оценки:\n" in user else "### Ответ модели:\n"
            self._reply(user.split(marker, 1)[-1].split("\n\n###")[0])
        finally:
            with server.lock:
                server.inflight -= 1

    def _reply(self, answer):
        auth = self.headers.get("Authorization", "")
        if answer == "ECHO-500":
            return self._send(500, ('{"error": "bad key \\"' + _escaped(auth) + '\\""}').encode())
        if answer.startswith("GZIP-"):
            twice = answer == "GZIP-TWICE"
            return self._send(200, gzip_bomb(twice), {"Content-Encoding": "gzip, gzip" if twice else "gzip"})
        match = re.fullmatch(r"R(\d+)", answer)
        if answer == "ECHO":
            content = f"Оценка 2; ключ {auth}; в JSON {json.dumps(_escaped(auth))}"
        else:
            content = MERA_REPLIES[int(match.group(1))][0] if match else "0"
        self._send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode())

    def _send(self, status, data, headers=None):
        hostile.send_reply(self, status, data, headers)


@pytest.fixture
def prose_judge(handler_server):
    def start(**kwargs):
        judge = ProseJudge(**kwargs)
        judge.url = handler_server(type("Handler", (ProseHandler,), {"judge": judge}))
        return judge

    return start


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(registry.metric_dir("limur")))


def ref(record_id, prompt="Задание"):
    return {"id": record_id, "answer": "Б", "options": ["а", "б"], "task_type": "rwsd", "context_type": "текст",
            "prompt": prompt}


def _assert_meras_request(server):
    for body in server.bodies:
        assert body["max_tokens"] == 256 and body["temperature"] == 0
        assert [m["role"] for m in body["messages"]] == ["user"]
        assert body["messages"][0]["content"].startswith("### Задание для оценки:\n")


# ---------------------------------------------------------------- MERA-exact judging, in every path


def test_mera_grades_through_the_metric(metric, prose_judge):
    server = prose_judge()
    for index, (_, grade, why) in enumerate(MERA_REPLIES):
        result = metric.compute(predictions=[f"R{index}"], references=[ref(index)], judge_url=server.url,
                                judge_model="m", judge_prompt="mera", judge_retries=0)
        assert result["judge_score"] == (grade or 0.0), why
        assert result["judge_score_judged"] == grade, why
        assert result["judge_coverage"] == (grade is not None) and result["judge"]["failed"] == 0, why
    _assert_meras_request(server)
    assert len(server.bodies) == len(MERA_REPLIES)


def _references_file(tmp_path, count):
    rows = [json.loads(line) for line in (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    lines = [json.dumps({**rows[i % len(rows)], "meta": {**rows[i % len(rows)]["meta"], "id": 9000 + i}},
                        ensure_ascii=False) for i in range(count)]
    path = tmp_path / "test.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _qahub(*argv, env=None):
    command = [os.path.join(os.path.dirname(sys.executable), "qahub"), "--quiet", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def test_mera_grades_through_qahub_evaluate(prose_judge, tmp_path):
    server = prose_judge()
    refs = _references_file(tmp_path, len(MERA_REPLIES))
    predictions = tmp_path / "predictions.json"
    predictions.write_text(json.dumps({9000 + i: f"R{i}" for i in range(len(MERA_REPLIES))}), encoding="utf-8")
    done = _qahub("evaluate", "limur", "--predictions", str(predictions), "--references", str(refs),
                  "--judge-url", server.url, "--judge-model", "m", "--judge-prompt", "mera", "--judge-retries", "0")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    grades = [grade for _, grade, _ in MERA_REPLIES]
    judged = [g for g in grades if g is not None]
    assert result["judge_score"] == pytest.approx(sum(judged) / len(grades))
    assert result["judge_score_judged"] == pytest.approx(sum(judged) / len(judged))
    assert result["judge_coverage"] == len(judged) / len(grades)
    assert result["judge"]["unparseable"] == grades.count(None)
    _assert_meras_request(server)


@pytest.fixture(scope="module")
def judge_tasks(tmp_path_factory):
    """A LIMUR export of the samples and a ``qahub harness-tasks --judge`` folder for it."""
    from qahub.export.writer import export

    root = tmp_path_factory.mktemp("judge-tasks")
    export("limur", root / "limur", data_dir=SAMPLES, cache_dir=root / "cache", sample=True)
    assert cli.main(["--quiet", "harness-tasks", "--out", str(root / "tasks"), "--dataset",
                     f"limur={root / 'limur'}", "--judge"]) == 0
    return root / "tasks"


def _lm_eval_run(tasks, replies, asked=None):
    """``qahub_limur`` through lm-eval's simple_evaluate; the model answers document k with ``replies[k]``
    (``asked``: the requests it was given)."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    class Scripted(LM):
        def generate_until(self, requests):
            if asked is not None:
                asked.extend(requests)
            order = sorted({r.doc["meta"]["id"] for r in requests})
            return [replies[order.index(r.doc["meta"]["id"]) % len(replies)] for r in requests]

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    manager = TaskManager(include_path=str(tasks))
    return simple_evaluate(model=Scripted(), tasks=["qahub_limur"], task_manager=manager, bootstrap_iters=0,
                           log_samples=True)


def _mera_env(monkeypatch, server):
    """Only MERA's variables: the address without /v1 (compute_llm_judge adds /v1/chat/completions)."""
    for name in ("QAHUB_JUDGE_URL", "QAHUB_JUDGE_MODEL", "QAHUB_JUDGE_API_KEY", "QAHUB_JUDGE_PROMPT",
                 "LM_EVAL_JUDGE_PROMPT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LM_EVAL_JUDGE_API_BASE", server.url)
    monkeypatch.setenv("LM_EVAL_JUDGE_MODEL", "mera-judge")
    monkeypatch.setenv("LM_EVAL_JUDGE_API_KEY", KEY)
    monkeypatch.setenv("QAHUB_JUDGE_RETRIES", "0")


def test_mera_grades_through_lm_eval_with_only_meras_variables(judge_tasks, prose_judge, monkeypatch):
    """Each logged sample's judge_score is MERA's grade of its reply; the judge ran in lm-eval's filter, many
    requests at once (process_results alone would ask one at a time); the replies pass on unchanged."""
    server = prose_judge(delay=0.2)
    _mera_env(monkeypatch, server)
    seen = 0
    for start in range(0, len(MERA_REPLIES), 8):  # the sample test split has 8 documents
        replies = [f"R{i}" for i in range(start, min(start + 8, len(MERA_REPLIES)))]
        result = _lm_eval_run(judge_tasks, replies)
        samples = result["samples"]["qahub_limur"]
        for sample in samples:
            [reply] = sample["filtered_resps"]
            grade = MERA_REPLIES[int(reply[1:])][1]
            assert sample["judge_score"] == (grade or 0.0), (reply, MERA_REPLIES[int(reply[1:])])
            assert sample["judge_coverage"] == int(grade is not None)
            seen += 1
        scores = result["results"]["qahub_limur"]
        assert scores["judge_coverage,none"] == pytest.approx(sum(s["judge_coverage"] for s in samples) / len(samples))
    assert seen >= len(MERA_REPLIES)
    assert server.max_inflight > 1, "the judge was asked one document at a time"
    assert set(server.paths) == {"/v1/chat/completions"}
    _assert_meras_request(server)


def test_lm_eval_judge_that_fails_everything_shows_zero_coverage(judge_tasks, monkeypatch):
    monkeypatch.setenv("LM_EVAL_JUDGE_API_BASE", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("LM_EVAL_JUDGE_MODEL", "m")
    monkeypatch.setenv("QAHUB_JUDGE_RETRIES", "0")
    scores = _lm_eval_run(judge_tasks, ["Ответ: Б"])["results"]["qahub_limur"]
    assert scores["judge_score,none"] == 0.0 and scores["judge_coverage,none"] == 0.0


def test_qahub_variables_win_over_meras(monkeypatch):
    import importlib

    task_api = importlib.import_module("qahub.metrics.limur.task_api")
    monkeypatch.setenv("LM_EVAL_JUDGE_API_BASE", "http://mera.example:8000/")
    monkeypatch.setenv("LM_EVAL_JUDGE_MODEL", "mera-model")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    monkeypatch.setenv("LM_EVAL_JUDGE_API_KEY", "lm-eval-key")
    monkeypatch.setenv("LM_EVAL_JUDGE_PROMPT", "{instruction}|{reference_answer}|{answer}")
    settings = task_api.judge_settings()
    assert (settings["url"], settings["model"]) == ("http://mera.example:8000/v1/chat/completions", "mera-model")
    assert settings["api_key"] == "openai-key" and settings["prompt"] == "mera"  # compute_llm_judge's order
    assert JUDGE.mera_prompt("{x}", "Б", "{y}", settings["template"]) == "{x}|Б|{y}"
    monkeypatch.setenv("QAHUB_JUDGE_URL", "http://127.0.0.1:8001")
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "qahub-model")
    settings = task_api.judge_settings()
    assert (settings["url"], settings["model"]) == ("http://127.0.0.1:8001", "qahub-model")
    assert settings["api_key"] is None  # MERA's keys go only to MERA's address


# ---------------------------------------------------------------- the judge reports what it did (issue 19)


def test_the_key_never_reaches_the_cache_or_the_messages(metric, prose_judge, tmp_path, caplog):
    server = prose_judge()
    cache = tmp_path / "cache.jsonl"
    with caplog.at_level(logging.DEBUG):
        result = metric.compute(predictions=["ECHO", "ECHO-500"], references=[ref(1), ref(2, "Задание 2")],
                                judge_url=server.url, judge_model="m", judge_api_key=KEY, judge_retries=0,
                                judge_prompt="mera", judge_cache_file=str(cache))
    assert (result["judge"]["judged"], result["judge"]["failed"]) == (1, 1)
    stored = cache.read_text(encoding="utf-8")
    assert "Оценка 2" in stored and "***" in stored
    text = stored + json.dumps(result, ensure_ascii=False) + caplog.text
    for form in (KEY, _escaped(KEY), json.dumps(_escaped(KEY))[1:-1], KEY[:8] + _escaped(KEY[8:])):
        assert form not in text
    assert "HTTP 500" in " ".join(result["judge"]["errors"])


def test_a_cache_that_cannot_be_written_stops_before_the_first_request(prose_judge, tmp_path):
    server = prose_judge()
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({9000: "R0"}), encoding="utf-8")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    done = _qahub("evaluate", "limur", "--predictions", str(predictions), "--references",
                  str(_references_file(tmp_path, 1)), "--judge-url", server.url, "--judge-model", "m",
                  "--judge-cache", str(folder))
    assert done.returncode == 1
    assert done.stderr.strip() == f"qahub evaluate: error: {folder}: judge cache is a folder, not a file"
    assert server.bodies == [], "requests were paid for before the cache was found unwritable"


def test_two_runs_sharing_a_cache_keep_both_runs_entries(metric, tmp_path):
    """Both runs read the (empty) cache before either writes it back: each must merge, not replace."""
    cache = tmp_path / "shared.jsonl"
    both_read = threading.Barrier(2, timeout=30)

    def judge(task, reference, answer):
        both_read.wait()
        return "1"

    results = {}

    def run(name):
        results[name] = metric.compute(predictions=[f"Ответ: Б {name}"], references=[ref(1, name)], judge=judge,
                                       judge_name="shared", judge_cache_file=str(cache))

    threads = [threading.Thread(target=run, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["first"]["judge_score"] == results["second"]["judge_score"] == 1.0
    assert len(cache.read_text(encoding="utf-8").splitlines()) == 2
    again = metric.compute(predictions=["Ответ: Б first", "Ответ: Б second"], references=[ref(1, "first"),
                           ref(2, "second")], judge=lambda *a: "0", judge_name="shared", judge_cache_file=str(cache))
    assert again["judge"]["cache_hits"] == 2 and again["judge_score"] == 1.0


@pytest.mark.parametrize("answer", ["GZIP-BOMB", "GZIP-TWICE"])
def test_a_gzip_bomb_is_cut_at_the_cap_without_inflating(metric, prose_judge, answer):
    server = prose_judge()
    gzip_bomb(answer == "GZIP-TWICE")  # made before tracing: the server's side is not the client's memory
    tracemalloc.start()
    try:
        result = metric.compute(predictions=[answer], references=[ref(1)], judge_url=server.url, judge_model="m",
                                judge_retries=0, judge_timeout=30.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result["judge"]["failed"] == 1
    assert "larger than 1048576 bytes" in result["judge"]["errors"][0]
    assert peak < 24 << 20, f"{peak / 2**20:.0f} MiB allocated for a reply capped at 1 MiB"


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1?api-version=1", "http://127.0.0.1:9/v1#frag",
                                 "http://127.0.0.1:9/v1?"])
def test_a_judge_url_with_a_query_or_fragment_is_refused(url, tmp_path, capsys):
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({9000: "R0"}), encoding="utf-8")
    assert cli.main(["--quiet", "evaluate", "limur", "--predictions", str(predictions), "--references",
                     str(_references_file(tmp_path, 1)), "--judge-url", url, "--judge-model", "m"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line == ("qahub evaluate: error: judge URL 'http://127.0.0.1:9/v1' is followed by a query string or "
                    "fragment (?… or #…), which would move the request path: give the address alone")


# ---------------------------------------------------------------- one declaration of the judge's settings (issue 21)


def _settings():
    import importlib

    return importlib.import_module("qahub.metrics.limur.judge_settings").SETTINGS


def test_every_judge_setting_is_a_flag_a_keyword_and_a_variable(metric):
    help_text = " ".join(_qahub("evaluate", "limur", "--help").stdout.split())
    docs = " ".join(metric.inputs_description.split())
    for setting in _settings():
        assert setting.flag in help_text, setting.name
        assert f"{setting.keyword}: {' '.join(setting.help.split())}" in docs, setting.name
        if setting.env:
            assert f"${setting.env}" in help_text or setting.kind == "secret", setting.name
            assert f"${setting.env}" in docs, setting.name


def test_compute_reads_the_judges_variables(metric, monkeypatch):
    """QAHUB_JUDGE_PROMPT and the others were read by the lm-eval task alone; compute reads them too now."""
    monkeypatch.setenv("QAHUB_JUDGE_PROMPT", "mera")
    monkeypatch.setenv("QAHUB_JUDGE_CONCURRENCY", "2")
    result = metric.compute(predictions=["Ответ: Б"], references=[ref(1)], judge=lambda *_: "2")
    assert result["judge"]["prompt"] == "mera" and result["judge_score"] == 1.0
    assert metric.compute(predictions=["Ответ: Б"], references=[ref(1)], judge=lambda *_: "1",
                          judge_prompt="seed")["judge"]["prompt"] == "seed"  # a keyword wins over its variable


@pytest.mark.parametrize("name, value, problem", [
    ("QAHUB_JUDGE_CONCURRENCY", "0", "$QAHUB_JUDGE_CONCURRENCY: expected an integer >= 1, got 0"),
    ("QAHUB_JUDGE_TIMEOUT", "soon", "$QAHUB_JUDGE_TIMEOUT: expected a finite number of seconds > 0, got 'soon'"),
    ("QAHUB_JUDGE_PROMPT", "strict", "$QAHUB_JUDGE_PROMPT: expected one of seed, mera, got 'strict'"),
])
def test_a_bad_judge_variable_is_named(metric, monkeypatch, name, value, problem):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(problem)):
        metric.compute(predictions=["Ответ: Б"], references=[ref(1)], judge=lambda *_: "1")


def test_the_lm_eval_task_reads_the_same_declaration(monkeypatch):
    import importlib

    task_api = importlib.import_module("qahub.metrics.limur.task_api")
    monkeypatch.setenv("QAHUB_JUDGE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "m")
    settings = task_api.judge_settings()
    assert (settings["prompt"], settings["concurrency"], settings["backoff"]) == ("mera", 8, 1.0)  # TASK_DEFAULTS
    monkeypatch.setenv("QAHUB_JUDGE_BACKOFF", "0")
    monkeypatch.setenv("QAHUB_JUDGE_CONCURRENCY", "3")
    monkeypatch.setenv("QAHUB_JUDGE_PROMPT", "seed")
    settings = task_api.judge_settings()
    assert (settings["prompt"], settings["concurrency"], settings["backoff"]) == ("seed", 3, 0.0)
    assert task_api.configured_judge().backoff == 0.0


# ---------------------------------------------------------------- which judge, from where, with what credentials (issue 27)

USER, PASSWORD = "judge-user", "pw-Secret-77"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


def _with_credentials(url):
    return url.replace("http://", f"http://{USER}:{PASSWORD}@")


def _no_credentials_in(text):
    for form in (PASSWORD, BASIC, _escaped(PASSWORD), _escaped(BASIC), f"{USER}:"):
        assert form not in text, form


def _record(url, model, prompt="mera"):
    """What a judge score is recorded with: the URL without credentials, model, prompt, max tokens."""
    return {"url": url, "model": model, "prompt": prompt, "prompt_id": JUDGE.PROMPT_IDS[prompt],
            "max_tokens": {"mera": 256, "seed": 16}[prompt]}


@pytest.mark.parametrize("env, first, second", [
    ({"QAHUB_JUDGE_URL": "http://127.0.0.1:8001", "LM_EVAL_JUDGE_API_BASE": "http://mera.example:8000",
      "LM_EVAL_JUDGE_MODEL": "mera-model"}, "$QAHUB_JUDGE_URL", "$LM_EVAL_JUDGE_MODEL"),
    ({"LM_EVAL_JUDGE_API_BASE": "http://mera.example:8000", "QAHUB_JUDGE_MODEL": "qahub-model"},
     "$LM_EVAL_JUDGE_API_BASE", "$QAHUB_JUDGE_MODEL"),
])
def test_the_lm_eval_task_refuses_a_url_and_a_model_from_two_places(monkeypatch, env, first, second):
    """Before: every request went to the first URL with the second's model, without a word."""
    task_api = importlib.import_module("qahub.metrics.limur.task_api")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for call in (task_api.judge_settings, task_api.judge_record):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == (f"the judge URL comes from {first} and its model from {second}, two places (two "
                                  f"judges?): set both in one place (precedence: {PRECEDENCE})")


def test_an_lm_eval_run_with_a_mixed_judge_stops_before_generating(judge_tasks, prose_judge, monkeypatch):
    server = prose_judge()
    monkeypatch.setenv("QAHUB_JUDGE_URL", server.url)
    monkeypatch.setenv("LM_EVAL_JUDGE_API_BASE", "http://127.0.0.1:9")
    monkeypatch.setenv("LM_EVAL_JUDGE_MODEL", "mera-judge")
    asked = []
    with pytest.raises(ValueError, match=re.escape("from $QAHUB_JUDGE_URL and its model from $LM_EVAL_JUDGE_MODEL")):
        _lm_eval_run(judge_tasks, ["Ответ: Б"], asked=asked)
    assert asked == [] and server.bodies == []


@pytest.mark.parametrize("flags, env, first, second", [
    (["--judge-url", "URL"], {"QAHUB_JUDGE_MODEL": "env-model"}, "--judge-url", "$QAHUB_JUDGE_MODEL"),
    (["--judge-model", "m"], {"QAHUB_JUDGE_URL": "URL"}, "$QAHUB_JUDGE_URL", "--judge-model"),
])
def test_qahub_evaluate_refuses_a_url_and_a_model_from_two_places(prose_judge, tmp_path, capsys, monkeypatch,
                                                                  flags, env, first, second):
    server = prose_judge()
    for name, value in env.items():
        monkeypatch.setenv(name, value.replace("URL", server.url))
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({9000: "R0"}), encoding="utf-8")
    argv = ["--quiet", "evaluate", "limur", "--predictions", str(predictions), "--references",
            str(_references_file(tmp_path, 1)), *[flag.replace("URL", server.url) for flag in flags]]
    assert cli.main(argv) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"qahub evaluate: error: the judge URL comes from {first} and its model from {second}, two "
                    f"places (two judges?): set both in one place (precedence: {PRECEDENCE})")
    assert server.bodies == []


def test_compute_refuses_a_keyword_url_with_a_variable_model(metric, prose_judge, monkeypatch):
    server = prose_judge()
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "env-model")
    with pytest.raises(ValueError, match=re.escape("comes from judge_url and its model from $QAHUB_JUDGE_MODEL")):
        metric.compute(predictions=["R0"], references=[ref(1)], judge_url=server.url)
    assert server.bodies == []


def test_flags_win_over_qahub_variables_and_the_precedence_is_documented(metric, prose_judge, tmp_path, monkeypatch):
    server = prose_judge()
    monkeypatch.setenv("QAHUB_JUDGE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "env-model")
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({9000: "R0"}), encoding="utf-8")
    done = _qahub("evaluate", "limur", "--predictions", str(predictions), "--references",
                  str(_references_file(tmp_path, 1)), "--judge-url", server.url, "--judge-model", "flag-model", "--judge-prompt", "mera")
    assert done.returncode == 0, done.stderr
    assert [body["model"] for body in server.bodies] == ["flag-model"]
    assert json.loads(done.stdout)["judge"]["model"] == "flag-model"
    readme = " ".join((registry.metric_dir("limur") / "README.md").read_text(encoding="utf-8").split())
    help_text = " ".join(_qahub("evaluate", "limur", "--help").stdout.split())
    assert PRECEDENCE in readme and PRECEDENCE in help_text
    assert PRECEDENCE in " ".join(metric.inputs_description.split())


def test_credentials_in_the_url_are_sent_but_never_shown_or_stored(prose_judge, tmp_path):
    """Before: the Basic token the server echoed landed in the cache, stdout and stderr as it was."""
    server = prose_judge()
    refs = _references_file(tmp_path, 2)
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({9000: "ECHO", 9001: "ECHO-500"}), encoding="utf-8")
    cache = tmp_path / "cache.jsonl"
    done = _qahub("evaluate", "limur", "--predictions", str(predictions), "--references", str(refs),
                  "--judge-url", _with_credentials(server.url) + "/v1", "--judge-model", "m", "--judge-prompt",
                  "mera", "--judge-retries", "0", "--judge-cache", str(cache))
    assert done.returncode == 1, done.stderr  # the ECHO-500 judgement failed
    assert set(server.auths) == {f"Basic {BASIC}"}  # the server got them, in the header
    result = json.loads(done.stdout)
    assert (result["judge"]["judged"], result["judge"]["failed"]) == (1, 1)
    assert "Оценка 2" in cache.read_text(encoding="utf-8") and "***" in cache.read_text(encoding="utf-8")
    _no_credentials_in(done.stdout + done.stderr + cache.read_text(encoding="utf-8"))
    assert {k: result["judge"][k] for k in ("url", "model", "prompt", "prompt_id", "max_tokens")} == \
        _record(server.url + "/v1/chat/completions", "m")


def test_the_cache_is_keyed_without_the_credentials(metric, prose_judge, tmp_path):
    """The same judge with and without a user and password is the same judge: its replies are reused."""
    server = prose_judge()
    cache = tmp_path / "cache.jsonl"
    for url in (_with_credentials(server.url), server.url):
        result = metric.compute(predictions=["R0"], references=[ref(1)], judge_url=url, judge_model="m",
                                judge_cache_file=str(cache))
    assert result["judge"]["cache_hits"] == 1 and len(server.bodies) == 1
    assert result["judge"]["url"] == server.url + "/v1/chat/completions"


@pytest.mark.parametrize("url, key, problem", [
    (f"http://{USER}:{PASSWORD}@judge.example.invalid/v1", None, "refusing to send the URL's user and password over "
     "plain http to judge.example.invalid: use https, or pass judge_allow_insecure_http=True "
     "(--judge-allow-insecure-http)"),
    (f"http://{USER}@judge.example.invalid/v1", None, "refusing to send the URL's user and password over plain http "
     "to judge.example.invalid"),
    (f"https://{USER}:{PASSWORD}@judge.example.invalid/v1", KEY, "the judge URL holds a user and password and an "
     "API key is given too: pass one"),
])
def test_credentials_are_refused_where_the_key_would_be(metric, url, key, problem):
    with pytest.raises(RuntimeError) as err:
        metric.compute(predictions=["Ответ: Б"], references=[ref(1)], judge_url=url, judge_model="m",
                       judge_api_key=key, judge_retries=0)
    assert str(err.value).startswith(problem)
    _no_credentials_in(str(err.value))


def test_the_lm_eval_results_record_the_judge(judge_tasks, prose_judge, monkeypatch):
    server = prose_judge()
    monkeypatch.setenv("QAHUB_JUDGE_URL", _with_credentials(server.url))
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "qahub-judge")
    monkeypatch.setenv("QAHUB_JUDGE_RETRIES", "0")
    result = _lm_eval_run(judge_tasks, ["ECHO"])
    assert result["configs"]["qahub_limur"]["metadata"]["judge"] == \
        _record(server.url + "/v1/chat/completions", "qahub-judge")
    assert result["results"]["qahub_limur"]["judge_score,none"] > 0
    assert set(server.auths) == {f"Basic {BASIC}"}
    _no_credentials_in(json.dumps(result, ensure_ascii=False, default=str))
    _mera_env(monkeypatch, server)
    result = _lm_eval_run(judge_tasks, ["R0"])
    assert result["configs"]["qahub_limur"]["metadata"]["judge"] == \
        _record(server.url + "/v1/chat/completions", "mera-judge")
    for name in ("LM_EVAL_JUDGE_API_BASE", "LM_EVAL_JUDGE_MODEL"):
        monkeypatch.delenv(name)
    assert _lm_eval_run(judge_tasks, ["R0"])["configs"]["qahub_limur"]["metadata"]["judge"] is None


@pytest.mark.parametrize("made", ["by inspect, the role bound", "before the eval"])
def test_the_inspect_log_records_the_grader(sample_exports, tmp_path, made):
    """The task's metadata names the grader when inspect makes the task with the role bound (``inspect eval
    qahub/limur --model-role grader=...``); each judged sample's score names it always."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is the [inspect] extra")
    import inspect_models  # noqa: F401 - registers the scripted model (mockllm downloads a tokenizer file)
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from qahub import inspect_tasks

    grader = get_model("qahub_script/grader", base_url=_with_credentials("http://127.0.0.1:9") + "/v1",
                       reply=lambda prompt: "2", memoize=False)
    task, args = inspect_tasks.TASKS["limur"], {"dataset": str(sample_exports["limur"])}
    if made == "before the eval":
        task, args = task(**args), {}
    (log,) = inspect_eval(task, task_args=args, model=get_model("qahub_script/scripted", memoize=False),
                          model_roles={"grader": grader}, log_dir=str(tmp_path / "logs"), display="none", limit=2)
    assert log.status == "success", log.error
    record = _record("http://127.0.0.1:9/v1", "qahub_script/grader")
    assert log.eval.metadata["qahub"]["judge"] == (record if made.startswith("by inspect") else None)
    assert [next(iter(s.scores.values())).metadata["judge"] for s in log.samples] == [record, record]
    _no_credentials_in(json.dumps([log.eval.metadata, [s.scores for s in log.samples]], default=str))


def _save_run(judge_tasks, replies, out):
    """``lm_eval --output_path out --log_samples`` of qahub_limur (lm-eval's own tracker)."""
    from lm_eval.loggers import EvaluationTracker

    result = _lm_eval_run(judge_tasks, replies)
    tracker = EvaluationTracker(output_path=str(out))
    samples = result.pop("samples")
    tracker.save_results_aggregated(results=result, samples=samples)
    tracker.save_results_samples(task_name="qahub_limur", samples=samples["qahub_limur"])
    return out


def test_the_report_compares_judge_scores_of_one_judge_only(judge_tasks, prose_judge, monkeypatch, tmp_path):
    from qahub.report import write_report

    server = prose_judge()
    monkeypatch.setenv("QAHUB_JUDGE_URL", server.url)
    monkeypatch.setenv("QAHUB_JUDGE_RETRIES", "0")
    runs = []
    for name, model, replies in (("a", "judge-a", ["R0", "R1"]), ("again", "judge-a", ["R1", "R2"]),
                                 ("b", "judge-b", ["R0", "R1"])):
        monkeypatch.setenv("QAHUB_JUDGE_MODEL", model)
        runs.append(f"{name}={_save_run(judge_tasks, replies, tmp_path / name)}")
    data = write_report(runs, tmp_path / "report", resamples=200, progress=False, jobs=1)
    entry = data["tasks"]["qahub_limur"]
    assert "judge_score" in entry["comparisons"]["again"] and "judge_coverage" in entry["comparisons"]["again"]
    assert "judge_score" not in entry["comparisons"]["b"] and "exact_match" in entry["comparisons"]["b"]
    assert {run: cells["judge_score"]["value"] is not None for run, cells in entry["scores"].items()} == \
        {"a": True, "again": True, "b": True}
    judge = {m: f"{m} at {server.url}/v1/chat/completions (prompt mera, max_tokens 256)" for m in ("judge-a", "judge-b")}
    assert f"again vs a: judge scores compared, both by {judge['judge-a']}" in entry["notes"]
    assert f"b vs a: judge scores not compared: b was judged by {judge['judge-b']}, a by {judge['judge-a']}" \
        in entry["notes"]
