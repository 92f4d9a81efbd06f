import argparse
import http.server
import itertools
import json
import logging
import math
import re
import threading
import time
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import evaluate
import hostile
import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qahub import registry
from qahub.evaluate_cli import limur as scoring

SAMPLES = registry.samples_dir("limur")
KEY = "sk-test-9f8e7d6c5b4a-SECRET"
pytestmark = pytest.mark.usefixtures("no_judge_env")  # no judge from the environment


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(registry.metric_dir("limur")))


_IDS = itertools.count(1)


def ref(answer, n_options=4, record_id=None, task_type="rwsd", context_type="текст", prompt="Задание 1"):
    """A reference record; ids are unique unless given."""
    record_id = next(_IDS) if record_id is None else record_id
    options = [f"вариант {i}" for i in range(n_options)]
    return {"id": record_id, "answer": answer, "options": options, "task_type": task_type,
            "context_type": context_type, "prompt": prompt}


# (reply, gold letter, number of options) by their strict and lenient outcome: 1 right, 0 wrong, "?" unparseable,
# "x" not an option
TABLE_BY_OUTCOME = {
    (1, 1): [
        ("Ответ: Г", "Г", 4),
        ("**Ответ:** Б.", "Б", 4),
        ("Ответ:\n**Г**", "Г", 4),
        ("Самолёты жались к стерне и бурчали, значит «они» — это самолёты.\n\nОтвет: Г", "Г", 7),
        ("Ответ - В", "В", 4),
        ("**Ответ**: (Д)", "Д", 5),
        ("  ОТВЕТ:   Ж)  ", "Ж", 8),
        ("Ответ: А\nНет, перечитаю текст.\nОтвет: Б", "Б", 4),
        ("Б", "Б", 4),
        ("**Б.**", "Б", 4),
        ("Правильный ответ — Б", "Б", 4),
    ],
    ("?", 1): [
        ("Ответ: A", "А", 4),
        ("Ответ: B", "В", 4),
        ("Ответ: E", "Е", 6),
        ("Ответ: Ë", "Ё", 7),
        ("B", "В", 4),
    ],
    (0, 0): [
        ("Ответ: Г", "Б", 4),
        ("Ответ: Е", "Ё", 7),
        ("Ответ: А\nНет, перечитаю текст.\nОтвет: Б", "А", 4),
    ],
    ("x", "x"): [
        ("Ответ: Ж", "Б", 4),
        ("Ответ: З", "Ё", 7),
    ],
    ("?", "?"): [
        ("Ответ: C", "В", 4),
        ("Б потому что", "Б", 4),
        ("Правильный ответ — Б, потому что…", "Б", 4),
        ("Ответы: Б", "Б", 4),
        ("ответ: в", "В", 4),
        ("Ответ: Г) самолёты", "Г", 4),
        ("Ответ: Z", "Б", 4),
        ("", "Б", 4),
    ],
}
TABLE = [(reply, gold, n_options, strict, lenient) for (strict, lenient), rows in TABLE_BY_OUTCOME.items()
         for reply, gold, n_options in rows]


@pytest.mark.parametrize("reply, gold, n_options, strict, lenient", TABLE)
def test_exact_match_table(metric, reply, gold, n_options, strict, lenient):
    result = metric.compute(predictions=[reply], references=[ref(gold, n_options)])
    for mode, suffix, expected in (("strict", "", strict), ("lenient", "_lenient", lenient)):
        assert result[f"exact_match{suffix}"] == (1.0 if expected == 1 else 0.0), mode
        assert result[f"unparseable{suffix}"] == int(expected == "?"), mode
        assert result[f"not_an_option{suffix}"] == int(expected == "x"), mode
    assert result["count"] == 1 and result["closed"] == 0


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
# 202 bare «В», no marker (a bare letter is read): ✓✓ · 204 «З» with 4 options: xx · 205 «Ответ - Д.» ✓✓
# 207 «ответ: в» (gold Б): ??
# MERA (best of the whole reply and the text after the last «Ответ:», SQuAD-normalised): 426 ✓ · 429 «** В» ✓
# 103 Latin «A» is the article "a": ✗ · 104 ✓ · 202 ✓ · 204 ✗ · 205 no «Ответ:» («Ответ -»), «ответ д» ✗ · 207 ✗
@pytest.mark.quick
def test_cli_on_samples():
    result = scoring.run(sample_args())
    assert (result["exact_match"], result["exact_match_lenient"], result["exact_match_mera"]) == (5 / 8, 6 / 8, 4 / 8)
    assert (result["unparseable"], result["unparseable_lenient"], result["not_an_option"]) == (2, 1, 1)
    assert result["closed"] == 0
    rwsd, kusdra = result["by_task_type"]["rwsd"], result["by_task_type"]["kusdra"]
    assert (rwsd["count"], rwsd["exact_match"], rwsd["exact_match_lenient"]) == (3, 2 / 3, 1.0)
    assert (kusdra["count"], kusdra["exact_match"], kusdra["unparseable"]) == (5, 3 / 5, 1)
    text, dialogue = result["by_context_type"]["текст"], result["by_context_type"]["диалог"]
    assert (text["count"], text["exact_match"]) == (5, 1.0)
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
        other = ("predictions", "references", "qahub_signature")  # the signature names the references too
        assert {k: v for k, v in got.items() if k not in other} == {k: v for k, v in expected.items() if k not in other}


# the messages of the one prediction reader (qahub.evaluate_cli.predictions), the same for every metric; a reply
# that is not a string (3) is a model's reply like any other: scored 0, never an error
@pytest.mark.parametrize("content, problem", [
    ({"426": "Ответ: Г"}, r"no prediction for 7 of the 8 rows \(id 429, 103, 104, 202, 204 \.\.\. \(7 in all\)\)"),
    ({**{str(i): "Ответ: А" for i in (426, 429, 103, 104, 202, 204, 205, 207)}, "999": "x"},
     r"record '999': the id 999 is not a row of .* \(all, test\)"),
    ({"abc": "Ответ: А"}, "record 'abc': the id 'id' must be an integer, got 'abc'"),
    ([{"id": 426, "outputs": "А"}, {"meta": {"id": 426}, "outputs": "Б"}],
     r"record 1: the id 426 is given twice \(first in record 0\)"),
])
def test_cli_prediction_errors(tmp_path, content, problem):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=f"p.json: {problem}"):
        scoring.run(sample_args(predictions=str(path)))


def test_cli_some_closed_answers_score_zero_and_are_counted(tmp_path):
    _test_split(tmp_path, closed=1)
    with pytest.warns(UserWarning, match="have no gold answer"):
        result = scoring.run(sample_args(references=str(tmp_path), predictions=str(_gold_predictions(tmp_path))))
    assert (result["count"], result["closed"], result["exact_match"], result["exact_match_mera"]) == (2, 1, 0.5, 0.5)


CLOSED = r"nothing to score: the test answers are closed in this file; score validation, or pass the open answers"


def test_cli_a_split_whose_answers_are_all_closed_is_nothing_to_score(tmp_path, capsys):
    """Issue 27.2: MERA's public test split keeps every answer closed: exact_match 0.0 with exit 0 before."""
    _test_split(tmp_path, closed=2)
    code, out, err = run_cli(capsys, "--predictions", str(_gold_predictions(tmp_path)), "--data-dir", str(tmp_path))
    assert (code, out) == (1, "") and len(err) == 1, err
    assert re.fullmatch(rf"qahub evaluate: error: {re.escape(str(tmp_path))} \(all, test\): {CLOSED}", err[0]), err


def test_cli_closed_answers_of_the_task_type_scored_are_nothing_to_score(tmp_path, capsys):
    """Only the rows scored count: a split whose rwsd answers are all closed has nothing to score with
    --task-type rwsd, though its kusdra answers are open."""
    rows = [json.loads(line) for line in (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    kinds = {row["meta"]["task_type"] for row in rows}
    assert kinds == {"rwsd", "kusdra"}
    (tmp_path / "test.jsonl").write_text("".join(
        json.dumps({**row, "outputs": "" if row["meta"]["task_type"] == "rwsd" else row["outputs"]},
                   ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({row["meta"]["id"]: "Ответ: А" for row in rows}), encoding="utf-8")
    argv = ("--predictions", str(predictions), "--data-dir", str(tmp_path))
    code, out, err = run_cli(capsys, *argv, "--task-type", "rwsd")
    assert (code, out, len(err)) == (1, "", 1) and re.search(CLOSED, err[0]), err
    code, out, err = run_cli(capsys, *argv, "--task-type", "kusdra")
    assert code == 0 and json.loads(out)["closed"] == 0, err


def test_metric_on_references_whose_answers_are_all_closed_raises(metric, sample_rows):
    closed = [{**row, "outputs": "", "label": -1} for row in sample_rows["test"].to_list()]
    message = (rf"limur: nothing to score: the answers are closed in these {len(closed)} references \(every outputs is \"\", "
               r"as in MERA's test split\); score validation, or pass the open answers")
    with pytest.raises(ValueError, match=message):
        metric.compute(predictions=["Ответ: А"] * len(closed), references=closed)
    metric.add_batch(predictions=["Ответ: А"] * len(closed), references=closed)
    with pytest.raises(ValueError, match=message):
        metric.compute()


def _test_split(folder, closed):
    """A test.jsonl of the first two sample records, the first ``closed`` of them with their answer closed."""
    rows = [json.loads(line) for line in (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()[:2]]
    (folder / "test.jsonl").write_text("".join(
        json.dumps({**row, "outputs": "" if n < closed else row["outputs"]}, ensure_ascii=False) + "\n"
        for n, row in enumerate(rows)), encoding="utf-8")


def _gold_predictions(folder):
    """Predictions of the sample's gold letter for the records of ``folder``'s test.jsonl."""
    rows = [json.loads(line) for line in (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    ids = {json.loads(line)["meta"]["id"] for line in (folder / "test.jsonl").read_text(encoding="utf-8").splitlines()}
    path = folder / "p.json"
    path.write_text(json.dumps({row["meta"]["id"]: f"Ответ: {row['outputs']}" for row in rows
                                if row["meta"]["id"] in ids}, ensure_ascii=False), encoding="utf-8")
    return path


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
    # over all five: the unparseable and the failed judgement count 0; over the three judged: 2/3
    assert result["judge_score"] == (1 + 1 + 0 + 0 + 0) / 5
    assert result["judge_score_judged"] == (1 + 1 + 0) / 3
    info = result["judge"]
    assert (info["computed"], info["judged"], info["unparseable"], info["failed"]) == (True, 3, 1, 1)
    assert info["coverage"] == 3 / 5 and info["prompt"] == "seed"
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
    assert result["judge_score"] == (0.0 if score is None else score)
    assert result["judge_score_judged"] == score  # None: nothing was judged, so there is no judged-only mean
    assert result["judge"]["unparseable"] == int(score is None)
    assert result["judge"]["coverage"] == result["judge_coverage"] == (0.0 if score is None else 1.0)


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
        self.bodies = []
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
        self.mera = "### Ответ для оценки:\n" in user  # MERA's prompt: the grade is 0, 1 or 2
        marker = "### Ответ для оценки:\n" if self.mera else "### Ответ модели:\n"
        answer = user.split(marker, 1)[1].split("\n\n### ", 1)[0]
        reference = user.split("### Эталонный ответ:\n", 1)[1].split("\n\n### ", 1)[0].split(".", 1)[0]
        with server.lock:
            server.bodies.append(body)
        with server.lock:
            server.requests[answer] += 1
            seen = server.requests[answer]
            server.headers_seen.append(dict(self.headers))
            server.inflight += 1
            server.max_inflight = max(server.max_inflight, server.inflight)
            server.in_flight_changed.notify_all()
            if server.hold and not server.in_flight_changed.wait_for(lambda: server.inflight >= server.hold, 2.0):
                server.hold_timeouts += 1
        self.left = False
        try:
            self._reply(server, body, answer, reference, seen)
        finally:
            self._leave()

    def send_response(self, *args, **kwargs):
        # a request stops counting as in flight when its answer starts: the client may send its next request as
        # soon as it has read this one, before this thread would get back to count it out (seen: 3 in flight
        # under a limit of 2 on a loaded machine)
        self._leave()
        super().send_response(*args, **kwargs)

    def _leave(self):
        if not self.left:
            self.left = True
            with self.server.lock:
                self.server.inflight -= 1

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
        if self.mera and grade in ("0", "1", "0.5"):
            grade = "1" if "FAIL-ONCE" in answer or "PARTIAL" in answer else ("2" if grade == "1" else "0")
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
        try:
            hostile.send_reply(self, status, text.encode("utf-8"), headers)
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
    assert result["judge_score"] == (1 + 1 + 0 + 1 + 0.5) / 9  # the 4 failed or unparseable count 0
    assert result["judge_score_judged"] == (1 + 1 + 0 + 1 + 0.5) / 5
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
    """A helper module of the metric directory (imported as qahub ships it: its siblings are relative imports)."""
    import importlib

    return importlib.import_module(f"qahub.metrics.limur.{name}")


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
    with pytest.raises(ValueError, match=r"raw.json: not valid JSON \(an object names the key '426' twice\)"):
        scoring.run(sample_args(predictions=str(raw)))
    padded = tmp_path / "padded.json"
    padded.write_text('{"426": "Ответ: Г", "0426": "Ответ: А"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"padded.json: record '0426': the id 426 is given twice \(first in record '426'\)"):
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
    (1, {"answer": None}, "gold answer must be a string, got None"),
    (1, {"answer": "Ы"}, "gold answer 'Ы' is not one of the letters"),
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
    with pytest.raises(ValueError, match=r"reference 1: expected a dict \(a dataset row\), got str"):
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
    """A reply that is not text is no error: it is unreadable and scores 0."""
    preds = ["Ответ: Б", "Ответ: Б"]
    preds[position] = 5
    result = metric.compute(predictions=preds, references=[ref("Б"), ref("Б")])
    assert (result["exact_match"], result["exact_match_mera"], result["unparseable"]) == (0.5, 0.5, 1)


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
    expected = 0.0 if score is None else score
    assert result["judge_score"] == expected and result["judge"]["unparseable"] == int(score is None)
    # beside the cache: only the lock two runs sharing it take (as datasets keeps its own)
    assert sorted(path.name for path in tmp_path.iterdir()) == [".jc.jsonl.lock", "jc.jsonl"], "a temporary file was left"
    again = metric.compute(predictions=["Ответ: Б"], references=[ref("Б", record_id=1)], judge=lambda *a: "0", **kwargs)
    assert again["judge"]["requests"] == 0 and again["judge_score"] == expected


def test_failed_cache_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()  # a folder where the cache file should go: the rename fails
    with pytest.raises(OSError):
        JUDGE.save_cache(str(target), {"k": "1"})
    assert sorted(path.name for path in tmp_path.iterdir()) == [".taken.lock", "taken"]


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
    assert result["judge_score"] == (1 + 0.5 + 0 + 0 + 0) / 5
    assert result["judge_score_judged"] == (1 + 0.5 + 0) / 3
    assert (info["judged"], info["unparseable"], info["failed"], info["coverage"]) == (3, 1, 1, 3 / 5)


def test_cli_exit_status_says_when_judge_calls_failed(tmp_path, capsys):
    from qahub import cli
    from qahub.evaluate_cli import limur as limur_cli

    judged = {"judged": 2, "unparseable": 0, "closed": 0, "errors": [], "unparseable_replies": []}
    assert limur_cli.exit_status({"count": 2, "judge": {"computed": False, "reason": "no judge"}}) == 0
    assert limur_cli.exit_status({"count": 2, "judge": {"computed": True, "failed": 0, **judged}}) == 0
    assert limur_cli.exit_status({"count": 5, "judge": {"computed": True, "failed": 3, **judged}}) == 1
    assert "3 example(s) could not be judged" in capsys.readouterr().err
    sample = registry.samples_dir("limur")
    dead = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: every call fails
    code = cli.main(["--quiet", "evaluate", "limur", "--predictions", str(sample / "predictions.json"),
                     "--references", str(sample / "test.jsonl"), "--judge-url", dead, "--judge-model", "m",
                     "--judge-retries", "0"])
    assert code == 1
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert line.startswith("qahub evaluate limur: the judge judged none of the 8 example(s) (8 failed, 0 replied "
                           "no grade; e.g. JudgeRequestError: ConnectError") and line.endswith("judge_score is no score")
    result = json.loads(out)
    assert (result["judge_score"], result["judge_score_judged"], result["judge_coverage"]) == (0.0, None, 0.0)


# ---------------------------------------------------------------- MERA's recipe (exact_match_mera)
# MERA-Evaluation/MERA 62309eb, benchmark_tasks/limur/utils.py: candidates = answer_candidates(reply) (the whole
# reply stripped, plus the text after its LAST "Ответ:" — case-sensitive, colon attached — when that differs and
# is not empty); the score is the best SQuAD compute_exact(gold, candidate) after deleting «»‹›„“”‟‘’‚‛—–‒―‐‑−…
# (answer_norm.py). SQuAD's normalize_answer: lower → delete string.punctuation (ASCII only) → the words
# a/an/the become a space → whitespace collapsed. So the Latin "A" of a reply becomes the article "a" and vanishes.
MERA_TABLE = [
    # (reply, gold, exact_match_mera, why)
    ("Б", "Б", 1, "the whole reply is the letter"),
    ("б", "Б", 1, "lower-cased on both sides"),
    ("Ответ: Б", "Б", 1, "the tail after the marker"),
    ("Ответ: Б.", "Б", 1, "ASCII period deleted"),
    ("Ответ: Б!", "Б", 1, "ASCII ! deleted"),
    ("Ответ: Б?", "Б", 1, "ASCII ? deleted"),
    ("Ответ: «Б»", "Б", 1, "guillemets are typographic punctuation"),
    ("Ответ: „Б“", "Б", 1, "German quotes too"),
    ("Ответ: ‹Б›", "Б", 1, "single guillemets too"),
    ("Ответ: ‘Б’", "Б", 1, "curly single quotes too"),
    ("Ответ: \"Б\"", "Б", 1, "ASCII quotes are string.punctuation"),
    ("Ответ: 'Б'", "Б", 1, "ASCII apostrophes too"),
    ("«Б»", "Б", 1, "quotes around the whole reply"),
    ("Ответ: **Б**", "Б", 1, "markdown asterisks are ASCII punctuation"),
    ("**Ответ:** Б", "Б", 1, "tail «** Б»"),
    ("**Ответ: Б**", "Б", 1, "tail «Б**»"),
    ("`Б`", "Б", 1, "backticks deleted"),
    ("Ответ: [Б]", "Б", 1, "brackets deleted"),
    ("Ответ: (Б)", "Б", 1, "parentheses deleted"),
    ("Ответ: Б)", "Б", 1, "a closing parenthesis deleted"),
    ("Ответ: Б_", "Б", 1, "underscore is ASCII punctuation"),
    ("Ответ: —Б—", "Б", 1, "em dashes are typographic punctuation"),
    ("Ответ: Б…", "Б", 1, "the ellipsis character"),
    ("Ответ: Б...", "Б", 1, "three ASCII periods"),
    ("Ответ: Б−", "Б", 1, "the minus sign U+2212 is in MERA's list"),
    ("Ответ: Б‐", "Б", 1, "the hyphen U+2010 too"),
    ("Ответ:Б", "Б", 1, "no space after the marker"),
    ("Ответ:\tБ", "Б", 1, "a tab after the marker"),
    ("Ответ: Б\u00a0", "Б", 1, "str.strip removes the no-break space"),
    ("\n\nОтвет: Б\n", "Б", 1, "surrounding whitespace stripped first"),
    ("Ответ: Ответ: Б", "Б", 1, "split at the last marker"),
    ("Б\nОтвет: Б", "Б", 1, "the tail is Б"),
    ("Ответ: А\nНет.\nОтвет: Б", "Б", 1, "«Ответ:» twice: the last one counts"),
    ("Ответ: А\nНет.\nОтвет: Б", "А", 0, "…and the first one does not"),
    ("Ответ: the Б", "Б", 1, "the English article is deleted"),
    ("Ответ: a Б", "Б", 1, "so is «a»"),
    ("Ответ: an Б", "Б", 1, "and «an»"),
    ("Ответ: б", "Б", 1, "lower case letter"),
    ("Ответ: A", "А", 0, "Latin A → article «a» → empty, not «а»"),
    ("A", "А", 0, "the same without the marker"),
    ("Ответ: B", "В", 0, "Latin B lowercases to «b», not Cyrillic «в»"),
    ("Ответ: Ё", "Е", 0, "Ё is not Е"),
    ("Ответ: Б", "Г", 0, "wrong letter"),
    ("", "Б", 0, "empty reply"),
    ("   \n", "Б", 0, "whitespace only"),
    ("Ответ:", "Б", 0, "nothing after the marker: only the whole reply, «ответ»"),
    ("ответ: Б", "Б", 0, "the marker is case-sensitive: «ответ б» as a whole"),
    ("Ответ - Б", "Б", 0, "no «Ответ:» marker"),
    ("Ответ : Б", "Б", 0, "a space before the colon is no marker"),
    ("Правильный ответ: Б", "Б", 0, "lower-case «ответ:» inside a sentence"),
    ("Ответ: Б — коробка", "Б", 0, "the option text follows the letter"),
    ("Ответ: Б. коробка", "Б", 0, "likewise after a period"),
    ("Ответ: (Б) коробка", "Б", 0, "likewise in parentheses"),
    ("Ответ: Б\n\nПояснение: коробка", "Б", 0, "the tail runs to the end of the reply"),
    ("Ответ: ББ", "Б", 0, "two letters"),
    ("Ответ: Б Б", "Б", 0, "two words"),
    ("<b>Б</b>", "Б", 0, "HTML: the tag letters «b» stay"),
    ("Ответ: ❝Б❞", "Б", 0, "ornamental quotes are not in MERA's list"),
    ("Ответ: Б\ud800", "Б", 0, "a lone surrogate stays a character"),
]


@pytest.mark.parametrize("reply, gold, expected, why", MERA_TABLE, ids=[row[3] for row in MERA_TABLE])
def test_exact_match_mera_table(metric, reply, gold, expected, why):
    assert len(MERA_TABLE) >= 40
    result = metric.compute(predictions=[reply], references=[ref(gold, 7)])
    assert result["exact_match_mera"] == float(expected), why
    assert TASK_API.score(reply, mera_doc(gold))["exact_match_mera"] == expected, why


@pytest.mark.quick
def test_exact_match_mera_table_as_one_batch(metric):
    result = metric.compute(predictions=[r[0] for r in MERA_TABLE], references=[ref(r[1], 7) for r in MERA_TABLE])
    assert result["exact_match_mera"] == sum(r[2] for r in MERA_TABLE) / len(MERA_TABLE)


MERA = _metric_helper("mera")


def squad_normalize_answer(s):
    """transformers' squad_metrics.normalize_answer, as written there (the reference for mera.py)."""
    import string

    def remove_articles(text):
        return re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


@given(st.lists(st.sampled_from(["A", "a", "the", " an ", "Б", "б", ".", "«", "»", "—", " ", "\n", "Ответ:",
                                 "**", "ё", "Ё", "-", "…"]), max_size=8).map("".join) | st.text(max_size=20))
def test_normalisation_is_squads(text):
    assert MERA.normalize_answer(text) == squad_normalize_answer(text)


def test_against_transformers_when_importable():
    """transformers is not installed here: the table above and the transcription test stand in for it."""
    try:
        from transformers.data.metrics import squad_metrics
    except ImportError:
        squad_metrics = None
    for reply, gold, expected, _ in MERA_TABLE:
        assert MERA.exact_match_mera(reply, gold) == expected
        if squad_metrics is not None:
            strip = MERA.strip_typographic
            got = max(squad_metrics.compute_exact(strip(gold), strip(c)) for c in MERA.answer_candidates(reply))
            assert got == expected


def test_mera_helpers_edge_cases():
    assert MERA.answer_candidates(None) == [""] and MERA.answer_candidates("  ") == [""]
    assert MERA.answer_candidates("x Ответ: ") == ["x Ответ:"]
    assert MERA.answer_candidates("Ответ: Б") == ["Ответ: Б", "Б"]
    assert MERA.best_score(len, []) == 0.0
    assert MERA.compute_exact("A", "") == 1  # a Latin A gold would equal an empty reply
    assert MERA.exact_match_mera("Б", "") == 0  # empty gold: 0, not compared
    assert MERA.exact_match_mera("", " ") == 1  # MERA tests `not gold` on the raw string: " " is compared


# ---------------------------------------------------------------- dataset rows as references


@pytest.fixture(scope="module")
def sample_rows(tmp_path_factory):
    from qahub import testing

    dsd = testing.build("limur", "all", SAMPLES, tmp_path_factory.mktemp("limur-rows"))
    return dsd


def test_dataset_rows_are_references(metric, sample_rows):
    test = sample_rows["test"]
    replies = json.loads((SAMPLES / "predictions.json").read_text(encoding="utf-8"))
    preds = [replies[str(row["meta"]["id"])] for row in test]
    from_dataset = metric.compute(predictions=preds, references=test)
    from_list = metric.compute(predictions=preds, references=test.to_list())
    from_cli = scoring.run(sample_args())
    for result in (from_dataset, from_list):
        assert (result["exact_match"], result["exact_match_lenient"], result["exact_match_mera"]) == (5 / 8, 6 / 8, 4 / 8)
        assert result == {k: v for k, v in from_cli.items() if k not in ("predictions", "references", "qahub_signature")}


def test_closed_rows_score_zero_and_are_counted(metric, sample_rows):
    rows = sample_rows["test"].to_list()
    closed = [{**row, "outputs": "", "label": -1} for row in rows[:3]]
    oracle = [f"Ответ: {row['outputs']}" for row in rows[3:]]
    calls = []
    result = metric.compute(predictions=["Ответ: А"] * 3 + oracle, references=closed + rows[3:],
                            judge=lambda *a: calls.append(a) or "1")
    n = len(rows)
    assert result["closed"] == 3 and result["count"] == n
    for key in ("exact_match", "exact_match_lenient", "exact_match_mera", "judge_score"):
        assert result[key] == (n - 3) / n, key
    assert result["judge_score_judged"] == 1.0 and result["judge"]["closed"] == 3
    assert len(calls) == n - 3, "a closed answer is never sent to the judge"


def test_rows_of_an_older_export_with_class_labels(metric, sample_rows):
    rows = sample_rows["validation"].to_list()
    old = [{**row, "outputs": row["label"], "meta": {**row["meta"], "task_type": ["rwsd", "kusdra"].index(
        row["meta"]["task_type"]), "context_type": ["текст", "диалог"].index(row["meta"]["context_type"])}}
        for row in rows]
    preds = [f"Ответ: {row['outputs']}" for row in rows]
    assert metric.compute(predictions=preds, references=old) == metric.compute(predictions=preds, references=rows)


@pytest.mark.parametrize("change, problem", [
    ({"outputs": None}, "outputs must be a string, got None"),
    ({"outputs": "Ы"}, "gold answer 'Ы' is not one of the letters"),
    ({"meta": {"id": 7, "task_type": "rwsd"}}, "lacks meta.context_type"),
    ({"meta": None}, "meta must be a dict"),
    ({"outputs": "З"}, r"gold answer 'З' names no option"),
])
def test_bad_rows_name_the_record(metric, sample_rows, change, problem):
    rows = sample_rows["validation"].to_list()[:2]
    rows[1] = {**rows[1], **change}
    with pytest.raises(ValueError, match=rf"reference 1 \(id .*\): {problem}"):
        metric.compute(predictions=["x", "y"], references=rows)


def test_row_without_options_or_prompt(metric, sample_rows):
    row = sample_rows["validation"].to_list()[0]
    slim = {key: row[key] for key in ("instruction", "inputs", "outputs", "meta")}
    assert metric.compute(predictions=["Ответ: Я"], references=[slim])["not_an_option"] == 0
    assert metric.compute(predictions=[f"Ответ: {row['outputs']}"], references=[slim])["exact_match"] == 1.0
    del slim["instruction"]
    with pytest.raises(ValueError, match=r"reference 0 \(id 101\): lacks prompt \(or instruction and inputs\)"):
        metric.compute(predictions=["x"], references=[slim])


# ---------------------------------------------------------------- MERA's judge prompt


def test_mera_prompt_text_and_best_candidate(metric):
    seen = []

    def judge(task, reference, answer):
        seen.append((task, reference, answer))
        return "2" if answer == "Б" else "0"

    row = {"instruction": "Вопрос {question}?\nА. {option_a}\nБ. {option_b}\n(А, Б)", "outputs": "Б",
           "inputs": {"question": "{x}", "option_a": "кубок", "option_b": "коробка"},
           "meta": {"id": 1, "task_type": "rwsd", "context_type": "текст"}}
    result = metric.compute(predictions=["Думаю, А. Ответ: Б"], references=[row], judge=judge, judge_prompt="mera")
    assert result["judge_score"] == 1.0 and result["judge"]["prompt"] == "mera"
    task = "Вопрос {x}?\nА. кубок\nБ. коробка\n(А, Б)"
    assert sorted(seen) == sorted([(task, "Б", "Думаю, А. Ответ: Б"), (task, "Б", "Б")])
    text = JUDGE.mera_prompt(task, "Б", "{answer}")
    assert text == ("### Задание для оценки:\n" + task + "\n\n### Эталонный ответ:\nБ\n\n### Ответ для оценки:\n"
                    "{answer}\n\n### Критерий оценки:\nПравильность ответа\n\n### Шкала оценивания по критерию:\n"
                    "0: Дан неправильный ответ или ответ отсутствует.\n\n1: Ответ модели неполный (не на все вопросы "
                    "задания получен ответ, в формулировке ответа отсутствует часть информации).\n\n2: Ответ модели "
                    "совпадает с эталонным или эквивалентен ему.")


@pytest.mark.parametrize("reply, score", [
    ("2", 1.0), ("1", 0.5), ("0", 0.0), (" 2 ", 1.0), ("2.", 1.0), ("Оценка: 1", 0.5), ("2.0", 1.0), ("1,5", 1.0),
    ("3", 1.0), ("-1", 0.5), (2, 1.0), (Decimal("1"), 0.5), (numpy.int64(2), 1.0), (-1, 0.0),
    ("два", None), ("", None), ("2 — ответ верный", 1.0), (float("nan"), None), (True, None), (None, None),
])
def test_mera_grades(metric, reply, score):
    """MERA's reading (the last number of a text, tests/test_limur_judge.py has the prose table) divided by 2 and
    clamped as MERA's normalize_score does; a number from a callable judge taken as is; anything else unparseable."""
    result = metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge=lambda *_: reply,
                            judge_prompt="mera")
    assert result["judge_score"] == (0.0 if score is None else score)
    assert result["judge"]["unparseable"] == int(score is None)


def test_mera_prompt_errors_count_zero(metric):
    def judge(task, reference, answer):
        if "ошибка" in answer:
            raise ConnectionError("judge offline")
        return "мусор" if "мусор" in answer else "2"

    preds = ["Ответ: Б", "ошибка", "мусор", "ошибка Ответ: Б"]  # the last: the whole reply fails, its tail «Б» is judged
    result = metric.compute(predictions=preds, references=[ref("Б") for _ in preds], judge=judge, judge_prompt="mera")
    assert result["judge_score"] == 2 / 4 and result["judge_score_judged"] == 1.0
    info = result["judge"]
    assert (info["judged"], info["failed"], info["unparseable"], info["coverage"]) == (2, 1, 1, 0.5)


def test_unknown_judge_prompt_is_refused(metric):
    with pytest.raises(JUDGE.JudgeConfigError.__base__, match="judge_prompt must be one of seed, mera"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge=lambda *_: "1", judge_prompt="gpt")


def test_endpoint_with_mera_prompt(metric, fake_judge):
    server = fake_judge()
    preds = ["Ответ: Б", "Ответ: А", "PARTIAL Б", "RAMBLE", "ALWAYS-500", "MALFORMED", "FAIL-ONCE Б"]
    result = metric.compute(predictions=preds, references=[ref("Б", prompt=f"З{i}") for i in range(len(preds))],
                            judge_prompt="mera", **endpoint_kwargs(server))
    # 2→1, «Ответ: А» 0, PARTIAL 1→0.5, RAMBLE unparseable 0, 500 failed 0, malformed failed 0, FAIL-ONCE 1→0.5
    assert result["judge_score"] == (1 + 0 + 0.5 + 0 + 0 + 0 + 0.5) / 7
    assert result["judge_score_judged"] == (1 + 0 + 0.5 + 0.5) / 4
    info = result["judge"]
    assert (info["judged"], info["unparseable"], info["failed"]) == (4, 1, 2)
    assert all(len(body["messages"]) == 1 and body["messages"][0]["role"] == "user" for body in server.bodies)
    assert all("### Шкала оценивания по критерию:\n0: Дан неправильный" in b["messages"][0]["content"]
               for b in server.bodies)
    # «Ответ: Б» and «Ответ: А» are judged twice each: the whole reply and the letter after the marker
    assert server.requests["Б"] == 1 and server.requests["Ответ: Б"] == 1 and server.requests["А"] == 1


# ---------------------------------------------------------------- the lm-evaluation-harness task (task_api)


def _task_api():
    """task_api imported as the package the harness imports it from (its siblings by relative import)."""
    import importlib

    return importlib.import_module("qahub.metrics.limur.task_api")


TASK_API = _task_api()


def mera_doc(gold, n_options=7):
    options = {f"option_{c}": (f"вариант {i}" if i < n_options else "") for i, c in enumerate("abcdefghi")}
    return {"instruction": "{question}\nОтвет: <буква>", "inputs": {"question": "Что?", "context": "",
            "reference": "", **options}, "outputs": gold, "meta": {"id": 1, "task_type": "rwsd",
            "context_type": "текст"}}


def test_task_entry():
    task = TASK_API.TASKS["qahub_limur"]
    assert (task.configs, task.splits, task.fewshot_split) == (("all",), ("test", "validation"), "shots")
    assert set(task.metrics) == {"exact_match", "exact_match_mera", "unparseable"}
    assert task.judge_metrics == {"judge_score": ("mean", True), "judge_coverage": ("mean", True)}
    assert callable(task.judge) and callable(task.judge_filter)
    assert task.until == ("\n\n",)


@pytest.mark.quick
def test_task_on_sample_rows_oracle_and_garbage(sample_rows):
    task = TASK_API.TASKS["qahub_limur"]
    docs = [doc for split in ("validation", "test", "shots") for doc in sample_rows[split].to_list()]
    for doc in docs:
        assert task.usable(doc)
        assert task.prompt(doc) == doc["instruction"].format(**doc["inputs"])
        assert task.prompt(doc).strip() == doc["prompt"]
        target = task.target(doc)
        assert target == doc["outputs"].strip() and not any(stop in target for stop in task.until)
        assert task.score(target, doc) == {"exact_match": 1, "exact_match_mera": 1, "unparseable": 0}
        assert task.score(f"Ответ: {target}", doc) == {"exact_match": 1, "exact_match_mera": 1, "unparseable": 0}
        for garbage in GARBAGE:
            values = task.score(garbage, doc)
            assert values["exact_match"] == values["exact_match_mera"] == 0 and values["unparseable"] == 1
    assert not task.usable({**docs[0], "outputs": ""})


GARBAGE = ["", "   ", None, 5, ["Б"], "x" * 10_000, "{\"answer\": ", "\ud800", "**жирный** _курсив_", b"\xd0\x91"]


def test_task_score_matches_the_metric(metric, sample_rows):
    rows = sample_rows["test"].to_list()
    replies = json.loads((SAMPLES / "predictions.json").read_text(encoding="utf-8"))
    preds = [replies[str(r["meta"]["id"])] for r in rows]
    values = [TASK_API.score(p, r) for p, r in zip(preds, rows)]
    result = metric.compute(predictions=preds, references=rows)
    for key in ("exact_match", "exact_match_mera"):
        assert result[key] == sum(v[key] for v in values) / len(values)
    assert result["unparseable"] == sum(v["unparseable"] for v in values)


def test_task_judge_score_from_the_environment(fake_judge, monkeypatch, sample_rows):
    doc = sample_rows["test"].to_list()[0]  # gold Г
    assert TASK_API.judge_score("Ответ: Г", doc) == 0.0  # no judge configured
    server = fake_judge()
    monkeypatch.setenv("QAHUB_JUDGE_URL", server.url)
    monkeypatch.setenv("QAHUB_JUDGE_MODEL", "judge-7b")
    assert TASK_API.judge_score("Ответ: Г", doc) == 1.0  # MERA's prompt by default
    assert TASK_API.judge_score("PARTIAL Г", doc) == 0.5
    assert TASK_API.judge_score("Ответ: А", doc) == 0.0
    assert TASK_API.judge_score("RAMBLE", doc) == 0.0 and TASK_API.judge_score("MALFORMED", doc) == 0.0
    assert TASK_API.judge_score(None, doc) == 0.0
    assert TASK_API.judge_score("Ответ: Г", {**doc, "outputs": ""}) == 0.0
    assert all(len(b["messages"]) == 1 for b in server.bodies)
    monkeypatch.setenv("QAHUB_JUDGE_PROMPT", "seed")
    assert TASK_API.judge_score("Ответ: Г", doc) == 1.0
    assert "### Эталонный ответ:\nГ. самолёты" in server.bodies[-1]["messages"][-1]["content"]
    monkeypatch.setenv("QAHUB_JUDGE_PROMPT", "gpt")
    assert TASK_API.judge_score("Ответ: Г", doc) == 0.0
    monkeypatch.setenv("QAHUB_JUDGE_PROMPT", "mera")
    monkeypatch.setenv("QAHUB_JUDGE_URL", "http://127.0.0.1:9")  # nothing listens: failed → 0.0
    monkeypatch.setenv("QAHUB_JUDGE_RETRIES", "0")
    assert TASK_API.judge_score("Ответ: Г", doc) == 0.0


MARKER_PIECES = ["ответ", "ОТВЕТ", "Ответ", "ᲂтвет", "оᲄвеᲅ", "оᲅᲀет", "İ", "ẞ", "ŉ", ":", " ", "**", "—", "-", "не",
                 "Б", "\n", "ﬃ"]


@given(st.lists(st.sampled_from(MARKER_PIECES), max_size=14).map("".join) | st.text(max_size=40))
def test_marker_search_from_the_end_is_the_last_regex_match(reply):
    """The fast search for the last marker agrees with the marker pattern's last match, also where lower-casing
    changes the length (İ, ŉ, ﬃ) or re.IGNORECASE matches other characters (ᲂ ᲄ ᲅ ᲀ)."""
    matches = list(ANSWERS._MARKER.finditer(reply))
    assert ANSWERS.last_marker_end(reply) == (matches[-1].end() if matches else None)


def test_many_markers_without_a_colon():
    reply = "ответ " * 50 + "Ответ: Б" + "\nответ" * 50  # more than 4 «ответ» after the marker: the linear scan
    assert ANSWERS.read_letter(reply) == ("Б", None)
    assert ANSWERS.last_marker_end(reply) == len("ответ " * 50 + "Ответ:")
    assert ANSWERS.read_letter("ответ " * 50 + "Б")[0] is None


def test_task_judge_entry_gives_a_values_dict(sample_rows):
    doc = sample_rows["test"].to_list()[0]
    assert TASK_API.TASKS["qahub_limur"].judge("Ответ: Г", doc) == {"judge_score": 0.0, "judge_coverage": 0}  # no judge


# ---------------------------------------------------------------- MERA's own task on a qahub export

MERA_YAML = """\
dataset_path: {location}
task: mera_limur_on_qahub
test_split: test
fewshot_split: shots
output_type: generate_until
doc_to_text: !function utils.doc_to_text
doc_to_target: "{{{{ outputs.strip() }}}}"
process_results: !function utils.process_results
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
num_fewshot: 0
metadata:
  version: 1.0
"""
# MERA's benchmark_tasks/limur/utils.py without the judge; answer_candidates / best_score / compute_exact come from
# MERA's lm-eval fork and answer_norm.py there, from qahub's reimplementation here; the strip stands in for the
# fork's remove_whitespace_and_nones filter
MERA_UTILS = """\
from qahub.metrics.limur.mera import answer_candidates, best_score, compute_exact


def process_results(doc, results):
    candidates = answer_candidates((results[0] or "").strip() if results else "")
    gold = doc.get("outputs") or ""
    if not gold:
        return {"exact_match": 0}
    return {"exact_match": best_score(lambda c: compute_exact(gold, c), candidates)}


def doc_to_text(doc):
    return doc["instruction"].format(**doc["inputs"])
"""


def test_meras_task_runs_on_a_qahub_export(sample_exports, tmp_path):
    """MERA's limur.yaml with only dataset_path changed (stock lm-eval, see MERA_UTILS): the export's default
    config, test split, shots split and ``{{ outputs.strip() }}`` work, and the numbers are exact_match_mera's."""
    lm_eval = pytest.importorskip("lm_eval")
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    folder = tmp_path / "tasks" / "mera_limur"
    folder.mkdir(parents=True)
    (folder / "limur.yaml").write_text(MERA_YAML.format(location=sample_exports["limur"]), encoding="utf-8")
    (folder / "utils.py").write_text(MERA_UTILS, encoding="utf-8")
    manager = TaskManager(include_path=str(tmp_path / "tasks"))
    replies = json.loads((SAMPLES / "predictions.json").read_text(encoding="utf-8"))

    class Replies(LM):
        def __init__(self, oracle):
            super().__init__()
            self.oracle = oracle

        def generate_until(self, requests):
            return [r.doc["outputs"].strip() if self.oracle else replies[str(r.doc["meta"]["id"])] for r in requests]

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    for oracle, expected in ((True, 1.0), (False, 4 / 8)):  # 4 / 8: exact_match_mera of test_cli_on_samples
        results = lm_eval.simple_evaluate(model=Replies(oracle), tasks=["mera_limur_on_qahub"], task_manager=manager)
        row = results["results"]["mera_limur_on_qahub"]
        assert (row["exact_match,none"], row["sample_len"]) == (expected, 8)


# ---------------------------------------------------------------- issues 14 and 15: one shape, rows only, nothing scored


def run_cli(capsys, *argv):
    """``qahub --quiet evaluate limur ARGV``: (exit code, stdout, stderr lines)."""
    from qahub import cli

    code = cli.main(["--quiet", "evaluate", "limur", *argv])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def sample_cli_args(predictions=None, *extra):
    return ["--predictions", str(predictions or SAMPLES / "predictions.json"), "--data-dir", str(SAMPLES), *extra]


def test_zero_examples_is_an_error(metric):
    with pytest.raises(ValueError, match="limur: nothing to score"):
        metric.compute(predictions=[], references=[])
    for _ in range(2):  # through add_batch, evaluate's path, the same
        metric.add_batch(predictions=[], references=[])
    with pytest.raises(ValueError, match="limur: nothing to score"):
        metric.compute()


def test_length_mismatch_names_both_counts(metric):
    with pytest.raises(ValueError, match="limur: 2 predictions but 1 references"):
        metric.compute(predictions=["Б", "Б"], references=[ref("Б")])


def test_fast_path_and_add_batch_agree(metric, sample_rows):
    test = sample_rows["test"].to_list()
    replies = json.loads((SAMPLES / "predictions.json").read_text(encoding="utf-8"))
    preds = [replies[str(row["meta"]["id"])] for row in test]
    direct = metric.compute(predictions=preds, references=test)
    metric.add_batch(predictions=preds[:3], references=test[:3])
    for pred, row in zip(preds[3:], test[3:], strict=True):
        metric.add(prediction=pred, reference=row)
    assert metric.compute() == direct
    assert (direct["exact_match"], direct["exact_match_lenient"], direct["exact_match_mera"]) == (5 / 8, 6 / 8, 4 / 8)
    metric.add_batch(predictions=preds[:1], references=test[:1])
    metric.add_batch(predictions=preds[:1], references=test[:1])
    with pytest.raises(ValueError, match=r"reference 1 \(id 426\): id 426 is also the id of reference 0"):
        metric.compute()


@pytest.mark.parametrize("option, value, problem", [
    ("judge_retries", -1, "judge_retries must be a non-negative integer, got -1"),
    ("judge_retries", 1.5, "judge_retries must be a non-negative integer, got 1.5"),
    ("judge_timeout", float("nan"), "judge_timeout must be a positive number of seconds, got nan"),
    ("judge_timeout", float("inf"), "judge_timeout must be a positive number of seconds, got inf"),
    ("judge_timeout", 0, "judge_timeout must be a positive number of seconds, got 0"),
    ("judge_timeout", -1, "judge_timeout must be a positive number of seconds, got -1"),
    ("judge_timeout", "5", "judge_timeout must be a positive number of seconds, got '5'"),
    ("judge_concurrency", 0, "judge_concurrency must be a positive integer, got 0"),
    ("judge_concurrency", -3, "judge_concurrency must be a positive integer, got -3"),
    ("judge_concurrency", True, "judge_concurrency must be a positive integer, got True"),
    ("judge_backoff", -0.5, "judge_backoff must be a non-negative number of seconds, got -0.5"),
    ("judge_backoff", float("inf"), "judge_backoff must be a non-negative number of seconds, got inf"),
])
def test_judge_options_are_checked_in_python(metric, option, value, problem):
    """Before: retries -1 failed each call with an AssertionError, nan/inf timeouts failed every request or
    ended in an OverflowError, concurrency 0 or -3 was accepted."""
    with pytest.raises(ValueError, match=re.escape(problem)):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge=lambda *a: "1", **{option: value})
    with pytest.raises(ValueError, match=re.escape(problem)):  # and without a judge: checked where read
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], **{option: value})


def test_judge_model_without_url_is_refused(metric, monkeypatch):
    with pytest.raises(RuntimeError, match="judge_model 'm' is set but no judge_url"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge_model="m")
    with pytest.raises(RuntimeError, match="pass either judge .* or judge_url and judge_model"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge=lambda *a: "1", judge_model="m")
    with pytest.raises(RuntimeError, match="judge_prompt must be one of seed, mera, got 'x'"):
        metric.compute(predictions=["Ответ: Б"], references=[ref("Б")], judge_prompt="x")


@pytest.mark.parametrize("argv, problem", [
    (["--judge-retries", "-1"], "argument --judge-retries: expected an integer >= 0, got -1"),
    (["--judge-timeout", "nan"], "argument --judge-timeout: expected a finite number of seconds > 0, got 'nan'"),
    (["--judge-timeout", "inf"], "argument --judge-timeout: expected a finite number of seconds > 0, got 'inf'"),
    (["--judge-timeout", "0"], "argument --judge-timeout: expected a finite number of seconds > 0, got '0'"),
    (["--judge-timeout", "-1"], "argument --judge-timeout: expected a finite number of seconds > 0, got '-1'"),
    (["--judge-concurrency", "0"], "argument --judge-concurrency: expected an integer >= 1, got 0"),
    (["--judge-concurrency", "-3"], "argument --judge-concurrency: expected an integer >= 1, got -3"),
    (["--judge-backoff", "-1"], "argument --judge-backoff: expected a finite number of seconds >= 0, got '-1'"),
    (["--judge-prompt", "x"], "argument --judge-prompt: invalid choice: 'x'"),
])
def test_judge_options_are_checked_on_the_command_line(capsys, argv, problem):
    with pytest.raises(SystemExit) as stop:
        run_cli(capsys, *sample_cli_args(None, *argv))
    assert stop.value.code == 2
    assert problem in capsys.readouterr().err


def test_judge_model_without_url_on_the_command_line(capsys):
    code, out, err = run_cli(capsys, *sample_cli_args(None, "--judge-model", "m"))
    assert (code, out) == (1, "")
    assert err == ["qahub evaluate: error: --judge-model needs --judge-url: the judge is an endpoint"]


@pytest.mark.parametrize("content, problem", [
    (b"", "empty: no predictions, nothing to score"),
    (b"  \n", "empty: no predictions, nothing to score"),
    (b"{}", "holds no predictions: nothing to score"),
    (b"[]", "holds no predictions: nothing to score"),
    (b'{"data": {"test": []}}', "holds no predictions: nothing to score"),
    # the messages of the one prediction reader, the same for every metric (a null reply or one holding a lone
    # surrogate is scored: test_a_reply_that_is_not_text_is_scored_not_refused)
    (b'{"426": "\xff\xfe"}', "not UTF-8 text (invalid start byte at byte 9, line 1)"),
    (b'{"426": "a", "426": "b"}', "not valid JSON (an object names the key '426' twice)"),
    (b'{"\\udc80": "a"}', r"record '\udc80': the id 'id' ('\udc80') holds a lone surrogate, which is not text"),
    (b'[{"id": 1e400, "outputs": "a"}]', "record 0: the id 'id' must be an integer, got inf"),
])
def test_prediction_files_that_score_nothing_or_are_broken(tmp_path, capsys, content, problem):
    """Each is one line on stderr naming the file, exit 1, and nothing on stdout (no score printed)."""
    path = tmp_path / "p.json"
    path.write_bytes(content)
    code, out, err = run_cli(capsys, *sample_cli_args(path))
    assert (code, out) == (1, "")
    assert err == [f"qahub evaluate: error: {path}: {problem}"]


def test_duplicate_key_in_a_json_lines_file(tmp_path, capsys):
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": 426, "outputs": "Б"}\n{"id": 429, "id": 430, "outputs": "Б"}\n', encoding="utf-8")
    code, out, err = run_cli(capsys, *sample_cli_args(path))
    assert (code, out, err) == (1, "", [f"qahub evaluate: error: {path}: record line 2: not valid JSON (an object names "
                                        "the key 'id' twice)"])


@pytest.mark.parametrize("reply", [None, "\ud800", 3])
def test_a_reply_that_is_not_text_is_scored_not_refused(tmp_path, capsys, reply):
    """A model's reply is never bad input (before: "the reply must be a string" / "holds a lone surrogate")."""
    path = tmp_path / "p.json"
    replies = {str(i): "Ответ: А" for i in (426, 429, 103, 104, 202, 204, 205, 207)} | {"426": reply}
    path.write_text(json.dumps(replies), encoding="utf-8")
    code, out, err = run_cli(capsys, *sample_cli_args(path))
    assert code == 0, err
    assert json.loads(out)["unparseable"] >= 1


def test_task_type_matching_nothing_is_an_error(tmp_path, capsys):
    """Before: a --task-type that matched no record printed count 0 with exit 0."""
    lines = [line for line in (SAMPLES / "test.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["meta"]["task_type"] == "kusdra"]
    (tmp_path / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "--predictions", str(SAMPLES / "predictions.json"), "--data-dir", str(tmp_path),
                             "--task-type", "rwsd")
    assert (code, out) == (1, "")
    assert err == [f"qahub evaluate: error: {tmp_path} (all, test): no record of task type 'rwsd': nothing to score"]


def test_references_from_an_export_a_build_and_a_file_agree(sample_exports, capsys):
    results = []
    for refs in (["--references", str(sample_exports["limur"])], ["--data-dir", str(SAMPLES)],
                 ["--references", str(SAMPLES / "test.jsonl")], ["--references", str(SAMPLES)]):
        code, out, err = run_cli(capsys, "--predictions", str(SAMPLES / "predictions.json"), *refs)
        assert (code, err) == (0, [])
        result = json.loads(out)
        # the signature names the references (a folder's, a file's name) too
        results.append({key: value for key, value in result.items() if key not in ("references", "qahub_signature")})
    assert all(result == results[0] for result in results)
    assert (results[0]["exact_match"], results[0]["exact_match_mera"], results[0]["count"]) == (5 / 8, 4 / 8, 8)
    code, out, err = run_cli(capsys, "--predictions", str(SAMPLES / "predictions.json"),
                             "--references", str(sample_exports["limur"]), "--config", "rwsd")
    assert (code, json.loads(out)["count"], json.loads(out)["exact_match"]) == (0, 3, 2 / 3)


def test_a_file_with_any_name_is_built_as_the_split_asked_for(tmp_path):
    mine = tmp_path / "my-dev-copy.jsonl"
    mine.write_text((SAMPLES / "test.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    result = scoring.run(sample_args(references=str(mine), split="dev"))
    assert (result["count"], result["exact_match"]) == (8, 5 / 8)
    mine.write_text('{"instruction": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=f"{re.escape(str(mine))}: record line 1"):
        scoring.run(sample_args(references=str(mine)))


def test_closed_answers_note_is_a_warning_silenced_by_quiet(tmp_path, capsys):
    _test_split(tmp_path, closed=1)
    with pytest.warns(UserWarning, match="1 of 2 record"):
        scoring.run(sample_args(references=str(tmp_path), predictions=str(_gold_predictions(tmp_path))))
    code, out, err = run_cli(capsys, "--predictions", str(tmp_path / "p.json"), "--data-dir", str(tmp_path))
    assert (code, err, json.loads(out)["closed"]) == (0, [], 1)


def test_readme_maps_no_closed_answer_to_a_letter():
    """Issue 15.11: a closed test answer (-1, or "") is scored 0, never read as «З»."""
    readme = (registry.metric_dir("limur") / "README.md").read_text(encoding="utf-8")
    assert not re.search(r"-1[^\n]{0,60}З|З[^\n]{0,60}-1", readme)
    assert "`-1` (an older export's closed answer) is `\"\"` too: closed, scored 0" in " ".join(readme.split())


def test_api_key_that_no_header_can_carry_is_refused_unshown():
    with pytest.raises(JUDGE.JudgeConfigError, match="only printable ASCII") as err:
        JUDGE.Endpoint("http://127.0.0.1:9", "m", api_key="ключ-SECRET")
    assert "SECRET" not in str(err.value)


PREDICTION_FILES = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.dictionaries(st.one_of(st.sampled_from(["426", "0426", "429", "-1", "1e3", ""]), st.text(max_size=5)),
                    st.one_of(st.text(max_size=20), st.none(), st.integers(), st.floats(), st.booleans(),
                              st.lists(st.text(max_size=3), max_size=2)),
                    max_size=10).map(lambda d: json.dumps(d).encode()),
    st.lists(st.fixed_dictionaries({"id": st.one_of(st.integers(-2**70, 2**70), st.text(max_size=4), st.none(),
                                                    st.floats()),
                                     "outputs": st.one_of(st.text(max_size=20), st.none(), st.integers())}),
             max_size=6).map(lambda rows: json.dumps(rows).encode()),
)


@settings(max_examples=40, deadline=None)
@given(PREDICTION_FILES, st.sampled_from(["p.json", "p.jsonl"]))
def test_any_prediction_file_is_a_named_error_or_a_score(tmp_path_factory, content, name):
    """Whatever the bytes of the predictions file, the reader returns replies (by integer id, or a bare list) or
    raises a ValueError naming the file; never another exception."""
    path = tmp_path_factory.mktemp("p") / name
    path.write_bytes(content)
    try:
        read = scoring.load_predictions(path)
    except ValueError as err:
        assert str(err).startswith(f"{path}: ") and "\n" not in str(err)
        str(err).encode("utf-8")  # printable
    else:
        assert len(read) and (read.replies is not None or all(isinstance(k, int) for k in read.records))


def test_any_prediction_file_through_the_command_line(tmp_path, capsys):
    """The reader's errors reach the user as one line and exit 1 (a few files, the whole command line each)."""
    for content in (b"\x00\xff", b'{"426": 1}', b"[[]]", b'{"data": {"dev": []}}', b"\xef\xbb\xbf{}"):
        path = tmp_path / "p.json"
        path.write_bytes(content)
        code, out, err = run_cli(capsys, *sample_cli_args(path))
        assert (code, out, len(err)) == (1, "", 1) and err[0].startswith(f"qahub evaluate: error: {path}: ")


ODD_REPLIES = st.one_of(st.none(), st.integers(), st.floats(), st.binary(max_size=10), st.text(max_size=40),
                        st.lists(st.text(max_size=3), max_size=2), st.just("\ud800Ответ: Б"),
                        st.just("Ответ: " + "Б" * 100_000))


@settings(max_examples=40, deadline=None)
@given(st.lists(ODD_REPLIES, min_size=1, max_size=5), st.booleans())
def test_entry_points_give_scores_in_range(metric, replies, added):
    refs = [ref("Б", record_id=index + 1) for index in range(len(replies))]
    if added:
        metric.add_batch(predictions=replies, references=refs)
        result = metric.compute()
    else:
        result = metric.compute(predictions=replies, references=refs)
    for key in ("exact_match", "exact_match_lenient", "exact_match_mera"):
        assert 0 <= result[key] <= 1 and math.isfinite(result[key])
    assert result["count"] == len(replies)
    doc = {"outputs": "Б", "inputs": {"option_a": "a", "option_b": "b"}, "instruction": "{option_a}"}
    for reply in replies:
        values = TASK_API.score(reply, doc)
        assert set(values) == {"exact_match", "exact_match_mera", "unparseable"}
        assert all(value in (0, 1) for value in values.values())


def test_docstring_example_runs(monkeypatch):
    """The doctest of _KWARGS_DESCRIPTION, run as written: evaluate.load("limur") from metrics/."""
    import doctest

    monkeypatch.chdir(registry.metric_dir("limur").parent)
    module = evaluate.load("limur")
    test = doctest.DocTestParser().get_doctest(module.inputs_description, {"evaluate": evaluate}, "limur", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=5)


def test_references_that_are_nothing_loadable(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a dataset", encoding="utf-8")
    code, out, err = run_cli(capsys, "--predictions", str(SAMPLES / "predictions.json"), "--references", str(tmp_path))
    assert (code, out, len(err)) == (1, "", 1)
    assert err[0].startswith(f"qahub evaluate: error: {tmp_path}: not a LIMUR export, a Hub dataset or a folder of MERA")
    code, out, err = run_cli(capsys, "--predictions", str(SAMPLES / "predictions.json"), "--data-dir", str(SAMPLES),
                             "--split", "train")
    assert (code, out, err) == (1, "", [f"qahub evaluate: error: {SAMPLES}: no train split with all records "
                                        "(found validation, test, shots)"])


def test_ctrl_c_drops_the_queued_judge_requests():
    """A KeyboardInterrupt stops the judging at once: only requests already running finish (the pool used to
    run every queued request before the interrupt got through)."""
    import threading

    calls, lock, released = [], threading.Lock(), threading.Event()

    def judge(task, reference, answer):
        with lock:
            calls.append(answer)
        if answer == "a1":
            raise KeyboardInterrupt
        released.wait(0.2)  # a request that takes a while: the interrupt is read while it runs
        return "2"

    items = [("задание", "Б. самолёты", f"a{i}") for i in range(50)]
    with pytest.raises(KeyboardInterrupt):
        JUDGE.judge_all(items, judge, "test", concurrency=1)
    released.set()
    assert calls[:2] == ["a0", "a1"] and len(calls) <= 3  # a2 may have started before the interrupt was read


# how tests/test_predictions.py scores this corpus's gold replies against its sample export: the metric
# command and its options, the config and split read, the reply field, and (id fields, gold reply) of each
# prediction a row of that split gives
PREDICTION_CASE = dict(
    corpus="limur", metric=["limur"], config="all", split="validation", reply="outputs",
    items=lambda row: [({"id": row["meta"]["id"]}, f"Ответ: {row['outputs']}")], gold="outputs")
