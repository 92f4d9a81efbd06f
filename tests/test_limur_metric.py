import argparse
import http.server
import itertools
import json
import logging
import re
import threading
import time
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import evaluate
import numpy
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


_IDS = itertools.count(1)


def ref(answer, n_options=4, record_id=None, task_type="rwsd", context_type="текст", prompt="Задание 1"):
    """A reference record; ids are unique unless given."""
    record_id = next(_IDS) if record_id is None else record_id
    options = [f"вариант {i}" for i in range(n_options)]
    return {"id": record_id, "answer": answer, "options": options, "task_type": task_type,
            "context_type": context_type, "prompt": prompt}


# reply, gold letter, number of options, then strict and lenient: 1 right, 0 wrong, "?" unparseable, "x" not an option
TABLE = [
    ("Ответ: Г", "Г", 4, 1, 1),
    ("**Ответ:** Б.", "Б", 4, 1, 1),
    ("Ответ:\n**Г**", "Г", 4, 1, 1),
    ("Самолёты жались к стерне и бурчали, значит «они» — это самолёты.\n\nОтвет: Г", "Г", 7, 1, 1),
    ("Ответ: Г", "Б", 4, 0, 0),
    ("Ответ - В", "В", 4, 1, 1),
    ("**Ответ**: (Д)", "Д", 5, 1, 1),
    ("  ОТВЕТ:   Ж)  ", "Ж", 8, 1, 1),
    ("Ответ: A", "А", 4, "?", 1),
    ("Ответ: B", "В", 4, "?", 1),
    ("Ответ: E", "Е", 6, "?", 1),
    ("Ответ: Ë", "Ё", 7, "?", 1),
    ("Ответ: C", "В", 4, "?", "?"),
    ("Ответ: Е", "Ё", 7, 0, 0),
    ("Ответ: А\nНет, перечитаю текст.\nОтвет: Б", "Б", 4, 1, 1),
    ("Ответ: А\nНет, перечитаю текст.\nОтвет: Б", "А", 4, 0, 0),
    ("Б", "Б", 4, "?", "?"),
    ("Правильный ответ — Б, потому что…", "Б", 4, "?", "?"),
    ("Правильный ответ — Б", "Б", 4, 1, 1),
    ("Ответы: Б", "Б", 4, "?", "?"),
    ("ответ: в", "В", 4, "?", "?"),
    ("Ответ: Г) самолёты", "Г", 4, "?", "?"),
    ("Ответ: Ж", "Б", 4, "x", "x"),
    ("Ответ: З", "Ё", 7, "x", "x"),
    ("Ответ: Z", "Б", 4, "?", "?"),
    ("", "Б", 4, "?", "?"),
]


@pytest.mark.parametrize("reply, gold, n_options, strict, lenient", TABLE)
def test_exact_match_table(metric, reply, gold, n_options, strict, lenient):
    result = metric.compute(predictions=[reply], references=[ref(gold, n_options)])
    for mode, suffix, expected in (("strict", "", strict), ("lenient", "_lenient", lenient)):
        assert result[f"exact_match{suffix}"] == (1.0 if expected == 1 else 0.0), mode
        assert result[f"unparseable{suffix}"] == int(expected == "?"), mode
        assert result[f"not_an_option{suffix}"] == int(expected == "x"), mode
    assert "exact_match_mera" not in result
    assert result["count"] == 1


def test_table_as_one_batch(metric):
    """The whole table at once: the means and counts are the sums of the rows above."""
    result = metric.compute(predictions=[row[0] for row in TABLE], references=[ref(r[1], r[2]) for r in TABLE])
    n = len(TABLE)
    assert result["exact_match"] == sum(row[3] == 1 for row in TABLE) / n
    assert result["exact_match_lenient"] == sum(row[4] == 1 for row in TABLE) / n
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


# the sample predictions, worked by hand (id: reply → strict, lenient):
# 426 «Ответ: Г» ✓✓ · 429 verbose, «**Ответ:** В» ✓✓ · 103 Latin A for А: ?✓ · 104 two markers, last Б ✓✓
# 202 bare «В», no marker: ?? · 204 «З» with 7 options: xx · 205 «Ответ - Д.» ✓✓ · 207 «ответ: в» (gold Б): ??
def test_cli_on_samples():
    result = scoring.run(sample_args())
    assert (result["exact_match"], result["exact_match_lenient"]) == (4 / 8, 5 / 8)
    assert (result["unparseable"], result["unparseable_lenient"], result["not_an_option"]) == (3, 2, 1)
    rwsd, kusdra = result["by_task_type"]["rwsd"], result["by_task_type"]["kusdra"]
    assert (rwsd["count"], rwsd["exact_match"], rwsd["exact_match_lenient"]) == (3, 2 / 3, 1.0)
    assert (kusdra["count"], kusdra["exact_match"], kusdra["unparseable"]) == (5, 2 / 5, 2)
    text, dialogue = result["by_context_type"]["текст"], result["by_context_type"]["диалог"]
    assert (text["count"], text["exact_match"]) == (5, 4 / 5)
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
    with pytest.raises(ValueError, match=r"test.jsonl: record id 426: no gold answer"):
        scoring.run(sample_args(references=str(tmp_path)))


def test_bad_reference_record(metric):
    with pytest.raises(ValueError, match=r"reference 0 \(id 1\): gold answer 'Д' names no option \(it has 4\)"):
        metric.compute(predictions=["Ответ: Д"], references=[ref("Д", 4, record_id=1)])


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
        self.slow = 2.5
        self.hold = 0  # hold each request until this many are in flight (or 2 s pass)
        self.hold_timeouts = 0
        self.in_flight_changed = threading.Condition(self.lock)
        self.redirect_to = None
        self.retry_after = "0.3"

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
            server.in_flight_changed.notify_all()
            if server.hold and not server.in_flight_changed.wait_for(lambda: server.inflight >= server.hold, 2.0):
                server.hold_timeouts += 1
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
        if "DENY" in answer:
            return self._send(401, "no such key")
        if "REDIRECT" in answer:
            return self._send(302, "", {"Location": server.redirect_to})
        if "RETRY-AFTER" in answer and seen <= 2:
            return self._send(503, "busy", {"Retry-After": server.retry_after})
        if "HEADER-DRIP" in answer:
            return self._drip_headers()
        if "DRIP" in answer:
            return self._drip(json.dumps({"choices": [{"message": {"content": "1"}}]}).encode().ljust(80))
        if "MALFORMED" in answer:
            return self._send(200, '{"id": "x", "object": "chat.completion", "choices": []}')
        grade = "Пожалуй, неплохо" if "RAMBLE" in answer else ("1" if reference in answer else "0")
        if "FAIL-ONCE" in answer:
            grade = "0.5"
        completion = {"id": "c1", "object": "chat.completion", "model": body["model"],
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": grade},
                                   "finish_reason": "stop"}]}
        self._send(200, json.dumps(completion))

    def _drip(self, data):
        """A 200 whose body comes one byte every 50 ms: each read is quick, the whole reply is not."""
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for byte in data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _drip_headers(self):
        """Headers one line every 50 ms, for 4 s, then a good body."""
        try:
            self.wfile.write(b"HTTP/1.0 200 OK\r\n")
            for _ in range(80):
                self.wfile.write(b"X-Pad: 1\r\n")
                self.wfile.flush()
                time.sleep(0.05)
            data = json.dumps({"choices": [{"message": {"content": "1"}}]}).encode()
            self.wfile.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, status, text, headers=None):
        data = text.encode("utf-8")
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
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
    # 1 s: well above a normal reply even on a loaded 2-core CI machine, well below the slow replies (2.5 s)
    return {"judge_url": server.url, "judge_model": "judge-7b", "judge_api_key": KEY, "judge_timeout": 1.0,
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
    assert "no complete reply within 1.0 s" in errors and "malformed response body" in errors
    assert info["judge"] == f"judge-7b at {server.url}/v1/chat/completions"
    assert all(h["Authorization"] == f"Bearer {KEY}" for h in server.headers_seen)
    captured = capsys.readouterr()
    for text in (json.dumps(result, ensure_ascii=False), caplog.text, captured.out, captured.err):
        assert KEY not in text
    assert "HTTP 500" in caplog.text


def test_endpoint_concurrency_limit(metric, fake_judge):
    """The server holds each request until two are in flight: a serial client would time out on every one.

    A pair can be broken by scheduling (one request done before its partner arrives), so a few hold timeouts
    are tolerated; the limit shows as exactly two requests in flight at the peak."""
    server = fake_judge()
    server.hold = 2
    preds = [f"Ответ: Б ({i})" for i in range(8)]
    refs = [ref("Б", prompt=f"Задание {i}") for i in range(8)]
    result = metric.compute(predictions=preds, references=refs,
                            **endpoint_kwargs(server, judge_concurrency=2, judge_timeout=5.0, judge_retries=0))
    assert result["judge"]["requests"] == 8 and result["judge_score"] == 1.0
    assert server.max_inflight == 2 and server.hold_timeouts < 4


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
    with pytest.raises(RuntimeError, match="judge URL must start with http:// or https:// and name a host, got 'localhost:8000'"):
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


def _metric_helper(name):
    """A stand-alone helper module of the metric directory (they import only the standard library)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"limur_{name}", registry.metric_dir("limur") / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _answers_module():
    return _metric_helper("answers")


ANSWERS = _answers_module()
JUDGE = _metric_helper("judge")
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
    assert ANSWERS.read_letter(f"{reply}\nОтвет: {gold}")[0] == gold


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


# ---------------------------------------------------------------- review fixes


def test_redirect_is_refused_and_the_key_stays_home(metric, fake_judge):
    server, elsewhere = fake_judge(), fake_judge()
    server.redirect_to = f"{elsewhere.url}/steal?token=1"
    with pytest.raises(RuntimeError, match=rf"HTTP 302 redirect to {elsewhere.url}/steal; redirects are not "
                                           "followed .*set judge_url to the final address") as err:
        metric.compute(predictions=["REDIRECT Ответ: Б"], references=[ref("Б")], **endpoint_kwargs(server))
    assert not elsewhere.headers_seen, "the redirect was followed"
    assert KEY not in str(err.value)


@pytest.mark.parametrize("url, key, insecure, refused", [
    ("http://judge.example.invalid/v1", KEY, False, True),
    ("http://judge.example.invalid/v1", KEY, True, False),
    ("https://judge.example.invalid/v1", KEY, False, False),
    ("http://judge.example.invalid/v1", None, False, False),
    ("http://localhost:8000", KEY, False, False),
    ("http://127.0.0.2:8000", KEY, False, False),
    ("http://[::1]:8000", KEY, False, False),
])
def test_key_over_plain_http_needs_an_opt_in(url, key, insecure, refused):
    make = lambda: JUDGE.Endpoint(url, "m", api_key=key, allow_insecure_http=insecure)  # noqa: E731 (no request is made)
    if refused:
        with pytest.raises(JUDGE.JudgeConfigError, match="refusing to send the API key over plain http to "
                                                         "judge.example.invalid: use https, or pass judge_allow_insecure_http=True"):
            make()
    else:
        assert make().url.endswith("/v1/chat/completions")


def test_key_refusal_through_the_metric(metric):
    with pytest.raises(RuntimeError, match="refusing to send the API key over plain http"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge_url="http://judge.example.invalid",
                       judge_model="m", judge_api_key=KEY)


def test_openai_api_key_is_not_picked_up(metric, fake_judge, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = fake_judge()
    result = metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge_url=server.url, judge_model="m")
    assert result["judge_score"] == 1.0
    assert "Authorization" not in server.headers_seen[0]


@pytest.mark.parametrize("drip", ["DRIP", "HEADER-DRIP"])
def test_timeout_bounds_the_whole_request(metric, fake_judge, drip):
    """A reply (body or headers) dripping every 50 ms (about 4 s in all) never waits 0.3 s on one read."""
    server = fake_judge()
    start = time.monotonic()
    result = metric.compute(predictions=[f"{drip} Ответ: Б"], references=[ref("Б")],
                            **endpoint_kwargs(server, judge_timeout=0.3, judge_retries=0))
    elapsed = time.monotonic() - start
    assert (result["judge"]["judged"], result["judge"]["failed"]) == (0, 1)
    assert result["judge"]["errors"] == ["JudgeRequestError: no complete reply within 0.3 s"]
    assert elapsed < 3.0, f"the request ran {elapsed:.1f} s with a 0.3 s timeout (the drip lasts about 4 s)"
    patient = metric.compute(predictions=[f"{drip} Ответ: Б"], references=[ref("Б")],
                             **endpoint_kwargs(server, judge_timeout=10.0, judge_retries=0))
    assert patient["judge_score"] == 1.0  # the same drip, given time, is a good reply


def test_backoff_and_retry_after_delays(fake_judge):
    server = fake_judge()
    waits = []
    endpoint = JUDGE.Endpoint(server.url, "m", timeout=5.0, retries=3, backoff=0.1, sleep=waits.append)
    server.retry_after = "0.15"
    assert endpoint("Задание", "Б. x", "RETRY-AFTER Ответ: Б") == "1"
    assert waits == [0.15, 0.2]  # max(Retry-After, backoff · 2^attempt): max(0.15, 0.1), max(0.15, 0.2)
    waits.clear()
    assert endpoint("Задание", "Б. x", "FAIL-ONCE Ответ: Г") == "0.5"
    assert waits == [0.1]  # no Retry-After: the backoff alone
    waits.clear()
    with pytest.raises(JUDGE.JudgeRequestError, match="HTTP 500"):
        endpoint("Задание", "Б. x", "ALWAYS-500")
    assert waits == [0.1, 0.2, 0.4]


def test_retry_after_is_waited_for_real(metric, fake_judge):
    server = fake_judge()
    server.retry_after = "0.3"
    start = time.monotonic()
    result = metric.compute(predictions=["RETRY-AFTER Ответ: Б"], references=[ref("Б")],
                            **endpoint_kwargs(server, judge_timeout=5.0, judge_retries=2, judge_backoff=0.01))
    assert result["judge_score"] == 1.0 and server.requests["RETRY-AFTER Ответ: Б"] == 3
    assert time.monotonic() - start >= 0.6


@pytest.mark.parametrize("value, seconds", [("2", 2.0), ("0.5", 0.5), ("1000", 60.0), ("-3", 0.0), ("soon", 0.0),
                                            (None, 0.0), ("nan", 0.0)])
def test_retry_after_values(value, seconds):
    assert JUDGE.retry_after(value) == seconds


def test_retry_after_as_http_date():
    import email.utils

    assert 25 <= JUDGE.retry_after(email.utils.formatdate(time.time() + 30, usegmt=True)) <= 30


def test_duplicate_reference_ids(metric):
    with pytest.raises(ValueError, match=r"reference 2 \(id 7\): id 7 is also the id of reference 0"):
        metric.compute(predictions=["Ответ: Б"] * 3, references=[ref("Б", record_id=7), ref("Б", record_id=8),
                                                                 ref("Б", record_id=7)])


def test_cli_duplicate_ids(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text('{"426": "Ответ: Г", "429": "Ответ: В", "426": "Ответ: А"}', encoding="utf-8")
    with pytest.raises(scoring.PredictionsError, match="raw.json: key '426' appears twice in one JSON object"):
        scoring.run(sample_args(predictions=str(raw)))
    padded = tmp_path / "padded.json"
    padded.write_text('{"426": "Ответ: Г", "0426": "Ответ: А"}', encoding="utf-8")
    with pytest.raises(scoring.PredictionsError, match="padded.json: record 0426: id 426 predicted twice"):
        scoring.run(sample_args(predictions=str(padded)))
    lines = (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "test.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"test.jsonl: record line {len(lines) + 1} \(id 426\): duplicate meta 'id' 426"):
        scoring.run(sample_args(references=str(tmp_path / "test.jsonl")))


class Grader:
    def __init__(self, grade):
        self.grade = grade

    def __call__(self, task, reference, answer):
        return self.grade


def test_callable_judges_do_not_share_cache_entries(metric):
    cache = {}
    preds, refs = ["Ответ: Б"], [ref("Б")]
    with pytest.raises(RuntimeError, match="judge_cache / judge_cache_file with a callable judge need judge_name"):
        metric.compute(predictions=preds, references=refs, judge=Grader("1"), judge_cache=cache)
    one = metric.compute(predictions=preds, references=refs, judge=Grader("1"), judge_name="grader-1", judge_cache=cache)
    zero = metric.compute(predictions=preds, references=refs, judge=Grader("0"), judge_name="grader-0", judge_cache=cache)
    assert (one["judge_score"], zero["judge_score"], zero["judge"]["requests"]) == (1.0, 0.0, 1)
    again = metric.compute(predictions=preds, references=refs, judge=Grader("0.5"), judge_name="grader-1",
                           judge_cache=cache)
    assert (again["judge_score"], again["judge"]["cache_hits"], again["judge"]["judge"]) == (1.0, 1, "grader-1")
    # unnamed callables: nothing is shared between calls
    assert metric.compute(predictions=preds, references=refs, judge=Grader("1"))["judge_score"] == 1.0
    assert metric.compute(predictions=preds, references=refs, judge=Grader("0"))["judge_score"] == 0.0


def test_endpoint_cache_is_keyed_on_url_and_model(metric, fake_judge):
    server, other = fake_judge(), fake_judge()
    cache = {}
    preds, refs = ["Ответ: Б"], [ref("Б")]
    runs = [metric.compute(predictions=preds, references=refs, judge_cache=cache,
                           **endpoint_kwargs(target, judge_model=model))
            for target, model in ((server, "a"), (server, "b"), (other, "a"), (server, "a"))]
    assert [run["judge"]["requests"] for run in runs] == [1, 1, 1, 0]


def test_explicit_callable_wins_over_the_environment(metric, monkeypatch):
    monkeypatch.setenv("QAHUB_JUDGE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "env-model")
    result = metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge=Grader("1"))
    assert result["judge_score"] == 1.0 and result["judge"]["judge"] == "Grader"


@pytest.mark.parametrize("index, change, problem", [
    (1, {"task_type": None}, "task_type is None, expected one of rwsd, kusdra"),
    (1, {"task_type": "winograd"}, "task_type is 'winograd'"),
    (0, {"context_type": "стих"}, "context_type is 'стих', expected one of текст, диалог"),
    (1, {"prompt": None}, "prompt must be a string, got NoneType"),
    (1, {"answer": None}, "gold answer None is not one of the letters"),
    (0, {"answer": "Ё"}, r"gold answer 'Ё' names no option \(it has 4\)"),
    (1, {"options": [1, 2]}, "options must be a list of strings"),
    (1, {"id": "7"}, "id must be an integer, got '7'"),
    (1, {"id": True}, "id must be an integer, got True"),
    (1, "-prompt", "lacks prompt"),
    (0, "-options", "lacks options"),
])
def test_bad_references_name_the_record(metric, index, change, problem):
    refs = [ref("Б", record_id=5), ref("Б", record_id=6)]
    if isinstance(change, str):
        del refs[index][change[1:]]
    else:
        refs[index].update(change)
    record_id = refs[index].get("id")
    with pytest.raises(ValueError, match=rf"reference {index} \(id {re.escape(repr(record_id))}\): {problem}"):
        metric.compute(predictions=["Ответ: Б", "Ответ: Б"], references=refs)


def test_bad_reference_of_another_kind(metric):
    with pytest.raises(ValueError, match="reference 1: expected a dict, got str"):
        metric.compute(predictions=["Ответ: Б", "Ответ: Б"], references=[ref("Б"), "Б"])


@pytest.mark.parametrize("position", [0, 1])
def test_none_prediction_is_an_empty_reply(metric, position):
    preds = ["Ответ: Б", "Ответ: Б"]
    preds[position] = None
    seen = []
    result = metric.compute(predictions=preds, references=[ref("Б"), ref("Б")], judge=lambda t, r, a: seen.append(a) or 0)
    assert (result["exact_match"], result["unparseable"], result["unparseable_lenient"]) == (0.5, 1, 1)
    assert sorted(seen) == ["", "Ответ: Б"]


@pytest.mark.parametrize("position", [0, 1])
def test_prediction_that_is_not_text(metric, position):
    preds = ["Ответ: Б", "Ответ: Б"]
    preds[position] = 5
    with pytest.raises(ValueError, match=rf"prediction {position}: expected a string \(or None\), got int"):
        metric.compute(predictions=preds, references=[ref("Б"), ref("Б")])


def test_add_and_add_batch_check_too(metric):
    metric.add(prediction=None, reference=ref("Б"))
    metric.add_batch(predictions=["Ответ: Б"], references=[ref("Б")])
    assert metric.compute()["exact_match"] == 0.5
    with pytest.raises(ValueError, match="reference 0 .*task_type is None"):
        metric.add(prediction="Ответ: Б", reference={**ref("Б"), "task_type": None})


@pytest.mark.parametrize("grade, score", [
    (Decimal("0.5"), 0.5), (Decimal("1"), 1.0), (numpy.float32(0.5), 0.5), (numpy.int64(1), 1.0),
    (numpy.float64(0.0), 0.0), (Fraction(1, 2), 0.5), (Decimal("NaN"), None), (Decimal("sNaN"), None),
    (float("inf"), None), (numpy.True_, None), (True, None), ([1], None), (None, None), (2, None),
])
def test_grades_of_any_type_are_cached_whole(metric, tmp_path, grade, score):
    cache = tmp_path / "jc.jsonl"
    kwargs = {"judge_name": "typed", "judge_cache_file": str(cache)}
    result = metric.compute(predictions=["Ответ: Б"], references=[ref("Б", record_id=1)], judge=lambda *a: grade, **kwargs)
    assert result["judge_score"] == score and result["judge"]["unparseable"] == int(score is None)
    assert [path.name for path in tmp_path.iterdir()] == ["jc.jsonl"], "a temporary cache file was left"
    again = metric.compute(predictions=["Ответ: Б"], references=[ref("Б", record_id=1)], judge=lambda *a: "0", **kwargs)
    assert again["judge"]["requests"] == 0 and again["judge_score"] == score


def test_failed_cache_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()  # a folder where the cache file should go: the rename fails
    with pytest.raises(OSError):
        JUDGE.save_cache(str(target), {"k": "1"})
    assert [path.name for path in tmp_path.iterdir()] == ["taken"]


def test_fatal_status_mid_run_keeps_what_was_judged(metric, fake_judge, tmp_path):
    server = fake_judge()
    cache = tmp_path / "jc.jsonl"
    refs = [ref("Б", prompt=f"Задание {i}") for i in range(3)]
    kwargs = endpoint_kwargs(server, judge_cache_file=str(cache), judge_concurrency=1)
    with pytest.raises(RuntimeError, match="HTTP 401"):
        metric.compute(predictions=["Ответ: Б", "Ответ: А", "DENY"], references=refs, **kwargs)
    assert len(cache.read_text(encoding="utf-8").splitlines()) == 2
    again = metric.compute(predictions=["Ответ: Б", "Ответ: А", "Ответ: Б"], references=refs, **kwargs)
    assert (again["judge"]["requests"], again["judge"]["cache_hits"], again["judge_score"]) == (1, 2, 2 / 3)


def test_judge_score_is_over_judged_examples_and_coverage_is_reported(metric):
    grades = {"a": "1", "b": "0.5", "c": "не знаю", "d": "0"}

    def judge(task, reference, answer):
        if answer == "e":
            raise TimeoutError("slow")
        return grades[answer]

    result = metric.compute(predictions=list("abcde"), references=[ref("Б", prompt=c) for c in "abcde"], judge=judge)
    info = result["judge"]
    assert result["judge_score"] == (1 + 0.5 + 0) / 3
    assert (info["judged"], info["unparseable"], info["failed"], info["coverage"]) == (3, 1, 1, 3 / 5)


def test_cli_exit_status_says_when_judge_calls_failed(tmp_path, capsys):
    from qahub import cli
    from qahub.scoring import limur as limur_cli

    assert limur_cli.exit_status({"judge": {"computed": False, "reason": "no judge"}}) == 0
    assert limur_cli.exit_status({"judge": {"computed": True, "failed": 0}}) == 0
    assert limur_cli.exit_status({"judge": {"computed": True, "failed": 3}}) == 1
    assert "3 judge call(s) failed" in capsys.readouterr().err
    sample = registry.samples_dir("limur")
    dead = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: every call fails
    code = cli.main(["--quiet", "evaluate", "limur", "--predictions", str(sample / "predictions.json"),
                     "--references", str(sample / "test.jsonl"), "--judge-url", dead, "--judge-model", "m",
                     "--judge-retries", "0"])
    assert code == 1
    assert "judge call(s) failed" in capsys.readouterr().err
