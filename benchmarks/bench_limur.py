"""LIMUR metric: exact-match throughput through `evaluate`, and the judge's concurrency on a local endpoint.

1. ``limur EM``: ``metric.compute`` (input checks, arrow round trip, two readings, breakdowns) against the
   bare reading functions of ``metrics/limur/answers.py`` in a loop, on the sample replies repeated.
2. ``limur judge``: the endpoint judge with 8 concurrent requests against one request at a time, on a fake
   OpenAI-compatible server on 127.0.0.1 that answers after a fixed latency.
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import threading
import time

from _common import measure, row

EM_REPLIES = 20_000
JUDGE_ITEMS = 64
JUDGE_LATENCY = 0.02


def _sample_inputs(n):
    from qahub import registry
    from qahub.evaluate_cli import limur as scoring

    folder = registry.samples_dir("limur")
    rows = scoring.load_references(folder / "test.jsonl")
    replies = scoring.load_predictions(folder / "predictions.json")
    refs = [{**rows[i % len(rows)], "meta": {**rows[i % len(rows)]["meta"], "id": i}} for i in range(n)]
    preds = [replies[rows[i % len(rows)]["meta"]["id"]] for i in range(n)]
    return preds, refs


def prepare_em_metric(n):
    from qahub import registry

    return (registry.load_metric("limur"), *_sample_inputs(n))


def em_metric(metric, preds, refs):
    result = metric.compute(predictions=preds, references=refs)
    return result["exact_match"], result["exact_match_lenient"]


def prepare_em_plain(n):
    from qahub import registry

    path = registry.metric_dir("limur") / "answers.py"
    spec = importlib.util.spec_from_file_location("limur_answers", path)
    answers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(answers)
    return (answers, *_sample_inputs(n))


def em_plain(answers, preds, refs):
    strict = lenient = 0
    for pred, ref in zip(preds, refs, strict=True):
        strict += answers.read_letter(pred)[0] == ref["outputs"]
        lenient += answers.read_letter(pred, lenient=True)[0] == ref["outputs"]
    n = len(preds)
    return strict / n, lenient / n


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(JUDGE_LATENCY)
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": "1"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def prepare_judge(n, concurrency):
    from qahub import registry

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    preds, refs = _sample_inputs(n)
    refs = [{**ref, "instruction": ref["instruction"] + f" #{i}"} for i, ref in enumerate(refs)]
    url = f"http://127.0.0.1:{server.server_address[1]}"
    return registry.load_metric("limur"), preds, refs, url, concurrency


def judge(metric, preds, refs, url, concurrency):
    result = metric.compute(predictions=preds, references=refs, judge_url=url, judge_model="bench",
                            judge_concurrency=concurrency)
    return result["judge_score"], result["judge"]["requests"]


def run() -> list[dict]:
    return [
        row(f"limur EM {EM_REPLIES} replies", measure("bench_limur:em_metric", EM_REPLIES),
            measure("bench_limur:em_plain", EM_REPLIES), "baseline: bare reading functions, no evaluate"),
        row(f"limur judge {JUDGE_ITEMS} items, {JUDGE_LATENCY * 1000:.0f} ms", measure("bench_limur:judge", JUDGE_ITEMS, 8),
            measure("bench_limur:judge", JUDGE_ITEMS, 1), "ours: 8 concurrent requests; baseline: 1"),
    ]
