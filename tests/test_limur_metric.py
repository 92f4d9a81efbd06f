import argparse
import http.server
import json
import logging
import threading
import time
from collections import Counter

import evaluate
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qahub import registry
from qahub.scoring import limur as scoring

SAMPLES = registry.samples_dir("limur")
KEY = "sk-test-9f8e7d6c5b4a-SECRET"


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(registry.metric_dir("limur")))


@pytest.fixture(autouse=True)
def no_judge_env(monkeypatch):
    for name in ("QAHUB_JUDGE_URL", "QAHUB_JUDGE_MODEL", "QAHUB_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def ref(answer, n_options=4, record_id=1, task_type="rwsd", context_type="текст", prompt="Задание 1"):
    options = [f"вариант {i}" for i in range(n_options)]
    return {"id": record_id, "answer": answer, "options": options, "task_type": task_type,
            "context_type": context_type, "prompt": prompt}


# reply, gold letter, number of options, then per mode: 1 right, 0 wrong, "?" unparseable, "x" not an option
TABLE = [
    ("Ответ: Г", "Г", 4, 1, 1, 1),
    ("**Ответ:** Б.", "Б", 4, 1, 1, 1),
    ("Ответ:\n**Г**", "Г", 4, 1, 1, 1),
    ("Самолёты жались к стерне и бурчали, значит «они» — это самолёты.\n\nОтвет: Г", "Г", 7, 1, 1, 1),
    ("Ответ: Г", "Б", 4, 0, 0, 0),
    ("Ответ - В", "В", 4, 1, 1, 0),
    ("**Ответ**: (Д)", "Д", 5, 1, 1, 0),
    ("  ОТВЕТ:   Ж)  ", "Ж", 8, 1, 1, 0),
    ("Ответ: A", "А", 4, "?", 1, 0),
    ("Ответ: B", "В", 4, "?", 1, 0),
    ("Ответ: E", "Е", 6, "?", 1, 0),
    ("Ответ: Ë", "Ё", 7, "?", 1, 0),
    ("Ответ: C", "В", 4, "?", "?", 0),
    ("Ответ: Е", "Ё", 7, 0, 0, 0),
    ("Ответ: А\nНет, перечитаю текст.\nОтвет: Б", "Б", 4, 1, 1, 1),
    ("Ответ: А\nНет, перечитаю текст.\nОтвет: Б", "А", 4, 0, 0, 0),
    ("Б", "Б", 4, "?", "?", 1),
    ("Правильный ответ — Б, потому что…", "Б", 4, "?", "?", 0),
    ("Правильный ответ — Б", "Б", 4, 1, 1, 0),
    ("Ответы: Б", "Б", 4, "?", "?", 0),
    ("ответ: в", "В", 4, "?", "?", 0),
    ("Ответ: Г) самолёты", "Г", 4, "?", "?", 0),
    ("Ответ: Ж", "Б", 4, "x", "x", 0),
    ("Ответ: З", "Ё", 7, "x", "x", 0),
    ("Ответ: Z", "Б", 4, "?", "?", 0),
    ("", "Б", 4, "?", "?", 0),
]


@pytest.mark.parametrize("reply, gold, n_options, strict, lenient, mera", TABLE)
def test_exact_match_table(metric, reply, gold, n_options, strict, lenient, mera):
    result = metric.compute(predictions=[reply], references=[ref(gold, n_options)])
    for mode, suffix, expected in (("strict", "", strict), ("lenient", "_lenient", lenient)):
        assert result[f"exact_match{suffix}"] == (1.0 if expected == 1 else 0.0), mode
        assert result[f"unparseable{suffix}"] == int(expected == "?"), mode
        assert result[f"not_an_option{suffix}"] == int(expected == "x"), mode
    assert result["exact_match_mera"] == float(mera)
    assert result["count"] == 1


def test_table_as_one_batch(metric):
    """The whole table at once: the means and counts are the sums of the rows above."""
    result = metric.compute(predictions=[row[0] for row in TABLE], references=[ref(r[1], r[2]) for r in TABLE])
    n = len(TABLE)
    assert result["exact_match"] == sum(row[3] == 1 for row in TABLE) / n
    assert result["exact_match_lenient"] == sum(row[4] == 1 for row in TABLE) / n
    assert result["exact_match_mera"] == sum(row[5] for row in TABLE) / n
    assert result["unparseable"] == sum(row[3] == "?" for row in TABLE)
    assert result["unparseable_lenient"] == sum(row[4] == "?" for row in TABLE)


def sample_args(**overrides):
    parser = argparse.ArgumentParser()
    scoring.add_arguments(parser)
    args = parser.parse_args(["--predictions", str(SAMPLES / "predictions.json"),
                              "--references", str(SAMPLES / "test.jsonl")])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


# the sample predictions, worked by hand (id: reply → strict, lenient, mera):
# 426 «Ответ: Г» ✓✓✓ · 429 verbose, «**Ответ:** В» ✓✓✓ · 103 Latin A for А: ?✓✗ · 104 two markers, last Б ✓✓✓
# 202 bare «В», no marker: ??✓ · 204 «З» with 7 options: xx✗ · 205 «Ответ - Д.» ✓✓✗ · 207 «ответ: в» (gold Б): ??✗
def test_cli_on_samples():
    result = scoring.run(sample_args())
    assert (result["exact_match"], result["exact_match_lenient"], result["exact_match_mera"]) == (4 / 8, 5 / 8, 4 / 8)
    assert (result["unparseable"], result["unparseable_lenient"], result["not_an_option"]) == (3, 2, 1)
    rwsd, kusdra = result["by_task_type"]["rwsd"], result["by_task_type"]["kusdra"]
    assert (rwsd["count"], rwsd["exact_match"], rwsd["exact_match_lenient"], rwsd["exact_match_mera"]) == (3, 2 / 3, 1.0, 2 / 3)
    assert (kusdra["count"], kusdra["exact_match"], kusdra["exact_match_mera"], kusdra["unparseable"]) == (5, 2 / 5, 2 / 5, 2)
    text, dialogue = result["by_context_type"]["текст"], result["by_context_type"]["диалог"]
    assert (text["count"], text["exact_match"], text["exact_match_mera"]) == (5, 4 / 5, 4 / 5)
    assert (dialogue["count"], dialogue["exact_match"], dialogue["exact_match_lenient"]) == (3, 0.0, 1 / 3)
    assert result["judge_score"] is None
    assert result["judge"]["computed"] is False and "no judge configured" in result["judge"]["reason"]
    json.dumps(result)


def test_cli_task_type_and_prediction_layouts(tmp_path):
    replies = json.loads((SAMPLES / "predictions.json").read_text(encoding="utf-8"))
    records = [{"outputs": text, "meta": {"id": int(i)}} for i, text in replies.items()]
    submission = tmp_path / "submission.json"
    submission.write_text(json.dumps({"data": {"test": records}}, ensure_ascii=False), encoding="utf-8")
    lines = tmp_path / "predictions.jsonl"
    lines.write_text("".join(json.dumps({"id": int(i), "output": t}, ensure_ascii=False) + "\n"
                             for i, t in replies.items()), encoding="utf-8")
    task = tmp_path / "task.json"
    test = [json.loads(line) for line in (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    task.write_text(json.dumps({"data": {"test": test}}, ensure_ascii=False), encoding="utf-8")
    expected = scoring.run(sample_args(task_type="rwsd"))
    assert expected["count"] == 3 and expected["exact_match"] == 2 / 3
    for predictions, references in ((submission, task), (lines, SAMPLES), (submission, SAMPLES / "test.jsonl")):
        got = scoring.run(sample_args(predictions=str(predictions), references=str(references), task_type="rwsd"))
        assert {k: v for k, v in got.items() if k not in ("predictions", "references")} == \
               {k: v for k, v in expected.items() if k not in ("predictions", "references")}


@pytest.mark.parametrize("content, problem", [
    ({"426": "Ответ: Г"}, r"no prediction for 7 of 8 records \(ids 429, 103, 104, 202, 204, 205, 207\)"),
    ({**{str(i): "Ответ: А" for i in (426, 429, 103, 104, 202, 204, 205, 207)}, "999": "x"},
     "predictions for ids not among the references: 999"),
    ({"abc": "Ответ: А"}, "record abc: id 'abc' is not an integer"),
    ([{"id": 426, "outputs": 3}], r"record 0: the reply must be a string, got 3"),
    ([{"id": 426, "outputs": "А"}, {"meta": {"id": 426}, "outputs": "Б"}], "record 1: id 426 predicted twice"),
])
def test_cli_prediction_errors(tmp_path, content, problem):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(scoring.PredictionsError, match=f"p.json: {problem}"):
        scoring.run(sample_args(predictions=str(path)))


def test_cli_closed_test_split(tmp_path):
    lines = (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    (tmp_path / "test.jsonl").write_text(json.dumps({**first, "outputs": ""}, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    with pytest.raises(ValueError, match=r"test.jsonl: record line 1 \(id 426\): no gold answer"):
        scoring.run(sample_args(references=str(tmp_path)))


def test_bad_reference_record(metric):
    with pytest.raises(ValueError, match=r"reference 0 \(id 1\): gold answer 'Д' names no option \(it has 4\)"):
        metric.compute(predictions=["Ответ: Д"], references=[ref("Д", 4)])


# ---------------------------------------------------------------- the judge


def test_callable_judge_cache_and_unparseable(metric):
    calls = Counter()

    def judge(task, reference, answer):
        calls[(task, answer)] += 1
        if "рассуждаю" in answer:
            return "Думаю, ответ скорее верный"
        if "ошибка" in answer:
            raise ConnectionError("judge offline")
        return 1 if reference.split(".")[0] in answer else "0"

    refs = [ref("Б", prompt="Задание 1"), ref("Б", prompt="Задание 1"), ref("В", prompt="Задание 2"),
            ref("В", prompt="Задание 3"), ref("Г", prompt="Задание 4")]
    preds = ["Ответ: Б", "Ответ: Б", "Ответ: А", "я рассуждаю… Ответ: В", "ошибка"]
    result = metric.compute(predictions=preds, references=refs, judge=judge)
    assert result["judge_score"] == (1 + 1 + 0) / 3
    info = result["judge"]
    assert (info["computed"], info["judged"], info["unparseable"], info["failed"]) == (True, 3, 1, 1)
    assert (info["requests"], info["cache_hits"]) == (4, 1)
    assert calls[("Задание 1", "Ответ: Б")] == 1 and sum(calls.values()) == 4
    assert info["unparseable_replies"] == ["Думаю, ответ скорее верный"]
    assert info["errors"] == ["ConnectionError: judge offline"]
    assert result["by_task_type"]["rwsd"]["judge_score"] == result["judge_score"]


@pytest.mark.parametrize("reply, score", [
    ("1", 1.0), ("0.5", 0.5), ("0,5", 0.5), (" 0 ", 0.0), ("1.0", 1.0), ("Оценка: 0.5", 0.5), ("0.5.", 0.5),
    ("2", None), ("0.7", None), ("1 — ответ верный", None), ("", None), ("да", None),
])
def test_judge_reply_parsing(metric, reply, score):
    result = metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge=lambda *_: reply)
    assert result["judge_score"] == score
    assert result["judge"]["unparseable"] == int(score is None)


class FakeJudge(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible chat-completions server on 127.0.0.1 whose behaviour the model answer chooses.

    The answer under evaluation is in the user message; words in it pick a behaviour: SLOW-ONCE (first request
    sleeps past the client's timeout), ALWAYS-SLOW, FAIL-ONCE (first request gets a 500), ALWAYS-500 (a 500
    whose body echoes the Authorization header), MALFORMED (a 200 that is not a chat completion), RAMBLE (an
    unparseable grade). Otherwise the grade is 1 when the reference letter is in the answer, else 0.
    """

    daemon_threads = True

    def __init__(self, status=None, delay=0.0):
        super().__init__(("127.0.0.1", 0), JudgeHandler)
        self.lock = threading.Lock()
        self.requests = Counter()
        self.headers_seen = []
        self.inflight = self.max_inflight = 0
        self.status = status
        self.delay = delay
        self.slow = 1.0

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class JudgeHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = body["messages"][-1]["content"]
        answer = user.split("### Ответ модели:\n", 1)[1].split("\n\n### ", 1)[0]
        reference = user.split("### Эталонный ответ:\n", 1)[1].split(".", 1)[0]
        with server.lock:
            server.requests[answer] += 1
            seen = server.requests[answer]
            server.headers_seen.append(dict(self.headers))
            server.inflight += 1
            server.max_inflight = max(server.max_inflight, server.inflight)
        try:
            self._reply(server, body, answer, reference, seen)
        finally:
            with server.lock:
                server.inflight -= 1

    def _reply(self, server, body, answer, reference, seen):
        time.sleep(server.delay)
        if server.status:
            return self._send(server.status, json.dumps({"error": {"message": f"denied {self.headers['Authorization']}"}}))
        if "ALWAYS-SLOW" in answer or ("SLOW-ONCE" in answer and seen == 1):
            time.sleep(server.slow)
        if "ALWAYS-500" in answer or ("FAIL-ONCE" in answer and seen == 1):
            return self._send(500, f"internal error for {self.headers.get('Authorization')}")
        if "LONG-500" in answer:  # the key straddles the point where error messages cut the body
            return self._send(500, "x" * 180 + str(self.headers.get("Authorization")))
        if "ECHO-KEY" in answer:
            return self._send(200, json.dumps({"choices": [{"message": {"content": self.headers["Authorization"]}}]}))
        if "MALFORMED" in answer:
            return self._send(200, '{"id": "x", "object": "chat.completion", "choices": []}')
        grade = "Пожалуй, неплохо" if "RAMBLE" in answer else ("1" if reference in answer else "0")
        if "FAIL-ONCE" in answer:
            grade = "0.5"
        completion = {"id": "c1", "object": "chat.completion", "model": body["model"],
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": grade},
                                   "finish_reason": "stop"}]}
        self._send(200, json.dumps(completion))

    def _send(self, status, text):
        data = text.encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (timeout test)


@pytest.fixture
def fake_judge():
    servers = []

    def start(**kwargs):
        server = FakeJudge(**kwargs)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def endpoint_kwargs(server, **extra):
    return {"judge_url": server.url, "judge_model": "judge-7b", "judge_api_key": KEY, "judge_timeout": 0.3,
            "judge_retries": 2, "judge_backoff": 0.01, **extra}


def test_endpoint_judge(metric, fake_judge, caplog, capsys):
    server = fake_judge()
    preds = ["Ответ: Б", "Ответ: Б", "Ответ: А", "SLOW-ONCE Ответ: В", "FAIL-ONCE Ответ: Г", "ALWAYS-500",
             "MALFORMED", "RAMBLE", "ALWAYS-SLOW Ответ: Б"]
    refs = [ref("Б", prompt="Задание 1"), ref("Б", prompt="Задание 1"), ref("Б", prompt="Задание 2"),
            ref("В", prompt="Задание 3"), ref("Г", prompt="Задание 4"), ref("Б", prompt="Задание 5"),
            ref("Б", prompt="Задание 6"), ref("Б", prompt="Задание 7"), ref("Б", prompt="Задание 8")]
    with caplog.at_level(logging.DEBUG):
        result = metric.compute(predictions=preds, references=refs, **endpoint_kwargs(server))
    info = result["judge"]
    # judged: Б, Б (cached), А, slow-then-fine В, 500-then-0.5 Г → 1, 1, 0, 1, 0.5
    assert result["judge_score"] == (1 + 1 + 0 + 1 + 0.5) / 5
    assert (info["judged"], info["unparseable"], info["failed"], info["cache_hits"]) == (5, 1, 3, 1)
    assert info["unparseable_replies"] == ["Пожалуй, неплохо"]
    assert server.requests["Ответ: Б"] == 1, "the same (question, answer) was judged twice"
    assert server.requests["SLOW-ONCE Ответ: В"] == 2 and server.requests["FAIL-ONCE Ответ: Г"] == 2
    assert server.requests["ALWAYS-500"] == 3 and server.requests["ALWAYS-SLOW Ответ: Б"] == 3  # 1 + 2 retries
    assert server.requests["MALFORMED"] == 1
    errors = " | ".join(info["errors"])
    assert "HTTP 500" in errors and "internal error for Bearer ***" in errors
    assert "no reply within 0.3 s" in errors and "malformed response body" in errors
    assert info["judge"] == f"judge-7b at {server.url}/v1/chat/completions"
    assert all(h["Authorization"] == f"Bearer {KEY}" for h in server.headers_seen)
    captured = capsys.readouterr()
    for text in (json.dumps(result, ensure_ascii=False), caplog.text, captured.out, captured.err):
        assert KEY not in text
    assert "HTTP 500" in caplog.text


def test_endpoint_concurrency_limit(metric, fake_judge):
    server = fake_judge(delay=0.05)
    preds = [f"Ответ: Б ({i})" for i in range(8)]
    refs = [ref("Б", prompt=f"Задание {i}") for i in range(8)]
    result = metric.compute(predictions=preds, references=refs, **endpoint_kwargs(server, judge_concurrency=2))
    assert result["judge"]["requests"] == 8 and result["judge_score"] == 1.0
    assert 1 <= server.max_inflight <= 2


def test_endpoint_cache_file(metric, fake_judge, tmp_path):
    server = fake_judge()
    cache = tmp_path / "judge-cache.jsonl"
    kwargs = endpoint_kwargs(server, judge_cache_file=str(cache))
    first = metric.compute(predictions=["Ответ: Б", "Ответ: А"], references=[ref("Б"), ref("Б", record_id=2)], **kwargs)
    second = metric.compute(predictions=["Ответ: Б", "Ответ: А"], references=[ref("Б"), ref("Б", record_id=2)], **kwargs)
    assert sum(server.requests.values()) == 2
    assert (first["judge"]["requests"], second["judge"]["requests"], second["judge"]["cache_hits"]) == (2, 0, 2)
    assert first["judge_score"] == second["judge_score"] == 0.5
    assert KEY not in cache.read_text(encoding="utf-8")


@pytest.mark.parametrize("status", [401, 404])
def test_endpoint_fatal_status_stops_the_run(metric, fake_judge, status):
    server = fake_judge(status=status)
    with pytest.raises(RuntimeError, match=f"judge judge-7b at {server.url}/v1/chat/completions: HTTP {status}") as err:
        metric.compute(predictions=["Ответ: Б"] * 3, references=[ref("Б", record_id=i) for i in range(3)],
                       **endpoint_kwargs(server, judge_url=server.url + "/v1"))
    assert KEY not in str(err.value) and "Bearer ***" in str(err.value)
    assert type(err.value).__name__ == "JudgeConfigError"


def test_endpoint_from_environment(metric, fake_judge, monkeypatch):
    server = fake_judge()
    monkeypatch.setenv("QAHUB_JUDGE_URL", server.url + "/v1/chat/completions")
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "env-judge")
    monkeypatch.setenv("QAHUB_JUDGE_API_KEY", KEY)
    result = metric.compute(predictions=["Ответ: Б"], references=[ref("Б")])
    assert result["judge_score"] == 1.0 and result["judge"]["judge"].startswith("env-judge at ")
    assert server.headers_seen[0]["Authorization"] == f"Bearer {KEY}"


def test_judge_configuration_errors(metric, monkeypatch):
    with pytest.raises(RuntimeError, match="judge_url is set but no judge model"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge_url="http://127.0.0.1:9")
    with pytest.raises(RuntimeError, match="judge URL must start with http:// or https://, got 'localhost:8000'"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge_url="localhost:8000", judge_model="m")
    with pytest.raises(RuntimeError, match="either judge .* or judge_url"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge=lambda *a: "1",
                       judge_url="http://127.0.0.1:9", judge_model="m")


def test_cli_with_endpoint(fake_judge, monkeypatch, tmp_path):
    server = fake_judge()
    monkeypatch.setenv("MY_JUDGE_KEY", KEY)
    cache = tmp_path / "cache.jsonl"
    args = sample_args(judge_url=server.url, judge_model="judge-7b", judge_api_key_env="MY_JUDGE_KEY",
                       judge_timeout=5.0, judge_backoff=0.01, judge_cache=str(cache))
    result = scoring.run(args)
    replies = json.loads((SAMPLES / "predictions.json").read_text(encoding="utf-8"))
    tests = [json.loads(line) for line in (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    # the fake judge gives 1 when the gold letter appears anywhere in the reply
    expected = [1.0 if t["outputs"] in replies[str(t["meta"]["id"])] else 0.0 for t in tests]
    assert result["judge_score"] == sum(expected) / len(expected)
    assert result["judge"]["requests"] == len(tests) and sum(server.requests.values()) == len(tests)
    assert all(h["Authorization"] == f"Bearer {KEY}" for h in server.headers_seen)
    assert KEY not in json.dumps(result, ensure_ascii=False)


def test_metric_dir_does_not_import_qahub():
    import ast

    for path in registry.metric_dir("limur").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert not [n for n in names if n.split(".")[0] == "qahub"], path


def _answers_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("limur_answers", registry.metric_dir("limur") / "answers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ANSWERS = _answers_module()
REPLY_PIECES = ["Ответ:", "ответ -", "**", " ", "\n", ".", ")", "(", "A", "B", "E", "Ë", "a", "б", "the",
                *ANSWERS.LETTERS, "Рассуждаю…", "«", "»"]


@given(st.lists(st.sampled_from(REPLY_PIECES), max_size=10).map("".join) | st.text(max_size=30),
       st.sampled_from(list(ANSWERS.LETTERS)))
def test_reading_properties(reply, gold):
    strict, reason = ANSWERS.read_letter(reply)
    lenient, _ = ANSWERS.read_letter(reply, lenient=True)
    assert (strict is None) != (reason is None)
    assert strict is None or strict in ANSWERS.LETTERS
    if strict is not None:
        assert lenient == strict  # the lenient reading only adds readings
    assert ANSWERS.mera_exact(reply, gold) in (0, 1)
    assert ANSWERS.mera_exact(f"Рассуждение.\nОтвет: {gold}", gold) == 1


def test_key_never_leaks_from_echoing_servers(metric, fake_judge, caplog):
    server = fake_judge()
    with caplog.at_level(logging.DEBUG):
        result = metric.compute(predictions=["LONG-500", "ECHO-KEY"], references=[ref("Б", record_id=1),
                                ref("Б", record_id=2, prompt="Задание 2")], **endpoint_kwargs(server, judge_retries=0))
    info = result["judge"]
    assert (info["failed"], info["unparseable"]) == (1, 1)
    assert info["unparseable_replies"] == ["Bearer ***"]
    text = json.dumps(result, ensure_ascii=False) + caplog.text
    assert "HTTP 500" in text
    for start in range(0, len(KEY) - 6):
        assert KEY[start:start + 7] not in text, "a piece of the key leaked"
