"""The LIMUR judge inside lm-eval: what the judge adds to an lm-eval run of ``qahub_limur``.

lm-eval calls process_results one document at a time; qahub's judge task judges the whole run in lm-eval's
``custom`` filter, 8 requests at once. Ours: ``simple_evaluate`` of a ``qahub harness-tasks --judge`` folder,
the judge a fake OpenAI-compatible server on 127.0.0.1 answering each request after 100 ms; baseline: the same
run without the judge. 200 documents (the sample's test rows repeated, each reply different, one judgement
each): judged one at a time they would add 200 x 100 ms = 20 s. Target: the judge adds at most a quarter, 5 s.
"""

from __future__ import annotations

import http.server
import json
import os
import tempfile
import threading
from pathlib import Path

from _common import measure, met, row
from bench_limur import JudgeHandler

DOCUMENTS = 200
LATENCY = 0.1
CONCURRENCY = 8
TARGET = DOCUMENTS * LATENCY / 4


class _Judge(JudgeHandler):
    latency = LATENCY
    reply = "Оценка: 2"


def _scripted_lm():
    from lm_eval.api.model import LM

    class Scripted(LM):
        """Replies «<gold letter> (<id>)»: a different answer per document, without «Ответ:» (one candidate)."""

        def generate_until(self, requests):
            return [f"{r.doc['outputs']} ({r.doc['meta']['id']})" for r in requests]

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    return Scripted()


def limur_export(root: Path) -> Path:
    """A LIMUR export in ``root`` whose test split holds DOCUMENTS rows (also the lighteval judge benchmark's)."""
    from qahub import registry
    from qahub.export.writer import export

    samples = registry.samples_dir("limur")
    rows = [json.loads(line) for line in (samples / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    data = root / "data"
    data.mkdir()
    for name in ("dev.jsonl", "shots.jsonl"):
        (data / name).write_bytes((samples / name).read_bytes())
    lines = [json.dumps({**rows[i % len(rows)], "meta": {**rows[i % len(rows)]["meta"], "id": 10_000 + i}},
                        ensure_ascii=False) for i in range(DOCUMENTS)]
    (data / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    export("limur", root / "limur", data_dir=data, cache_dir=root / "cache")
    return root / "limur"


def start_judge():
    """The fake judge on 127.0.0.1, named in qahub's judge variables (CONCURRENCY requests at a time)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ.update({"QAHUB_JUDGE_URL": f"http://127.0.0.1:{server.server_address[1]}",
                       "QAHUB_JUDGE_MODEL": "bench", "QAHUB_JUDGE_CONCURRENCY": str(CONCURRENCY)})


def _task_folder(judge: bool) -> Path:
    """A LIMUR export whose test split holds DOCUMENTS rows, and its lm-eval task folder."""
    from qahub import cli

    root = Path(tempfile.mkdtemp(prefix="bench-limur-lmeval-"))
    location = limur_export(root)
    argv = ["--quiet", "harness-tasks", "--out", str(root / "tasks"), "--dataset", f"limur={location}"]
    assert cli.main(argv + (["--judge"] if judge else [])) == 0
    return root / "tasks"


def prepare_lm_eval_run(judge):
    from lm_eval.tasks import TaskManager

    if judge:
        start_judge()
    manager = TaskManager(include_path=str(_task_folder(judge)))
    return _scripted_lm(), manager


def lm_eval_run(model, manager):
    from lm_eval import simple_evaluate

    result = simple_evaluate(model=model, tasks=["qahub_limur"], task_manager=manager, bootstrap_iters=0)
    scores = result["results"]["qahub_limur"]
    return scores["exact_match,none"], scores.get("judge_score,none"), scores.get("judge_coverage,none")


def judge_rows(harness: str, target: str) -> list[dict]:
    """The row of ``target`` (a ``module:function`` of a judge flag) with the judge against without it."""
    ours = measure(target, True)
    baseline = measure(target, False)
    added = ours[0] - baseline[0]
    verdict = met(added <= TARGET)
    return [row(f"limur {harness} judge {DOCUMENTS} docs, {LATENCY * 1000:.0f} ms", ours, baseline,
                f"the judge adds {added:.2f} s to the {harness} run ({CONCURRENCY} at a time; {DOCUMENTS} x "
                f"{LATENCY * 1000:.0f} ms one at a time = {DOCUMENTS * LATENCY:.0f} s); target <= {TARGET:.1f} s: "
                f"{verdict}; result {ours[2]}")]


def run() -> list[dict]:
    return judge_rows("lm-eval", "bench_limur_lmeval:lm_eval_run")
