"""LIMUR metric: exact-match throughput through `evaluate`, and the judge's concurrency on a local endpoint.

1. ``limur EM``: ``evaluate.load(metrics/limur).compute`` (input checks, scores, breakdowns) against a plain loop
   of the metric's own per-example scorer (``score.score_reply``) and the three means, on the sample replies and
   rows repeated (100,000), both processes holding the same imports, the best of 3 to 10 of each, run in turn.
   Targets: at most 2x the loop's time and 2x its peak memory, the same scores.
2. ``limur judge``: the endpoint judge with 8 concurrent requests against one request at a time, on a fake
   OpenAI-compatible server on 127.0.0.1 that answers after a fixed latency.

``BUILD`` and ``make_source``: what ``bench_builds.py`` exports of LIMUR, from a >= 40 MB source.
"""

from __future__ import annotations

import ast
import http.server
import importlib.util
import json
import sys
import threading
import time

from _common import best_in_turn, copies_for, measure, met, peak_rss_mb, row

EM_REPLIES = 100_000
JUDGE_ITEMS = 64
JUDGE_LATENCY = 0.02
BUILD = {"config": "all", "options": {}}


def make_source(folder, megabytes):
    """train.jsonl: the sample's dev, test and shots records cycled under new ids."""
    from qahub.registry import samples_dir

    sample = samples_dir("limur")
    lines = [line for name in ("dev.jsonl", "test.jsonl", "shots.jsonl")
             for line in (sample / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    one = sum(len(line.encode()) + 1 for line in lines) / len(lines)
    folder.mkdir(parents=True)
    with open(folder / "train.jsonl", "w", encoding="utf-8") as f:
        for i in range(copies_for(megabytes, one)):
            record = records[i % len(records)]
            f.write(json.dumps({**record, "meta": {**record["meta"], "id": i}}, ensure_ascii=False) + "\n")


def _sample_inputs(n):
    from qahub.loaders._limur_files import read_rows

    from qahub import registry
    from qahub.evaluate_cli import limur as adapter

    folder = registry.samples_dir("limur")
    rows = read_rows(str(folder / "test.jsonl"), "test")
    replies = adapter.match(adapter.load_predictions(folder / "predictions.json"), rows)  # in the rows' order
    refs = [{**rows[i % len(rows)], "meta": {**rows[i % len(rows)]["meta"], "id": i}} for i in range(n)]
    preds = [replies[i % len(rows)] for i in range(n)]
    return preds, refs


def _loaded_metric():
    import evaluate

    from qahub import registry

    return evaluate.load(str(registry.metric_dir("limur")))


def prepare_em_metric(n):
    return (_loaded_metric(), *_sample_inputs(n), peak_rss_mb())


def em_metric(metric, preds, refs, before_mib):
    result = metric.compute(predictions=preds, references=refs)
    return (result["exact_match"], result["exact_match_lenient"], result["exact_match_mera"]), before_mib


def prepare_em_plain(n):
    """The loop's process loads the metric as well: it holds the imports compute's does (``import evaluate``
    alone, which imports transformers and torch when they are installed, is most of either peak)."""
    from qahub import registry

    _loaded_metric()
    folder = registry.metric_dir("limur")
    spec = importlib.util.spec_from_file_location("limur_plain", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules["limur_plain"] = package
    score = importlib.import_module("limur_plain.score")
    return (score.score_reply, *_sample_inputs(n), peak_rss_mb())


def em_plain(score_reply, preds, refs, before_mib):
    totals = {"strict": 0, "lenient": 0, "mera": 0}
    for pred, ref in zip(preds, refs, strict=True):
        values = score_reply(pred, ref["outputs"], len(ref["options"]))
        for name in totals:
            totals[name] += values[name]
    n = len(preds)
    return (totals["strict"] / n, totals["lenient"] / n, totals["mera"] / n), before_mib


def _em_row():
    metric, plain, tries = best_in_turn(("bench_limur:em_metric", EM_REPLIES), ("bench_limur:em_plain", EM_REPLIES))
    (scores, metric_before), (plain_scores, plain_before) = ast.literal_eval(metric[2]), ast.literal_eval(plain[2])
    ratio, peak_ratio = metric[0] / plain[0], metric[1] / plain[1]
    verdict = met(ratio <= 2 and peak_ratio <= 2 and scores == plain_scores)
    return row(f"limur EM {EM_REPLIES} replies", metric, plain,
               f"baseline: plain score_reply loop; best of {tries} each, in turn; {ratio:.2f}x its time, "
               f"{peak_ratio:.2f}x its peak (targets <= 2x, same scores: {verdict}); above the inputs and the imports "
               f"both hold, compute adds {metric[1] - metric_before:.0f} MiB, the loop {plain[1] - plain_before:.0f} MiB")


class JudgeHandler(http.server.BaseHTTPRequestHandler):
    """A fake judge: every chat completion answered with ``reply`` after ``latency`` seconds."""

    latency = JUDGE_LATENCY
    reply = "1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(self.latency)
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": self.reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def prepare_judge(n, concurrency):
    from qahub import registry

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JudgeHandler)
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
        _em_row(),
        row(f"limur judge {JUDGE_ITEMS} items, {JUDGE_LATENCY * 1000:.0f} ms", measure("bench_limur:judge", JUDGE_ITEMS, 8),
            measure("bench_limur:judge", JUDGE_ITEMS, 1), "ours: 8 concurrent requests; baseline: 1"),
    ]
