"""The LIMUR judge inside lighteval: what the judge adds to a lighteval run of ``qahub_limur``.

lighteval computes a task's per-document metrics one document at a time; qahub's ``judge_score`` is a batched
metric that judges the whole run at once through the lm-eval task's judge filter, 8 requests at a time. The same
200 documents, scripted replies and fake judge (127.0.0.1, 100 ms a request) as ``bench_limur_lmeval``. Ours:
lighteval's ``Pipeline`` on the custom task with the judge set; baseline: the same run without it. Judged one at a
time they would add 200 x 100 ms = 20 s. Target: the judge adds at most a quarter, 5 s.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench_limur_lmeval import judge_rows, limur_export, start_judge


def _scripted_model(root: Path):
    from lighteval.models.dummy.dummy_model import DummyModel, DummyModelConfig
    from lighteval.models.model_output import ModelResponse

    class Scripted(DummyModel):
        """Replies «<gold letter> (<id>)», as bench_limur_lmeval's model: one judgement per document."""

        def greedy_until(self, docs):
            return [ModelResponse(text=[f"{d.specific['qahub_doc']['outputs']} ({d.specific['qahub_id']})"])
                    for d in docs]

    return Scripted(DummyModelConfig(model_name="scripted", cache_dir=str(root / "cache")))


def prepare_lighteval_run(judge):
    from qahub import lighteval_tasks

    root = Path(tempfile.mkdtemp(prefix="bench-limur-lighteval-"))
    os.environ[lighteval_tasks.ENV] = f"limur={limur_export(root)}"
    if judge:
        start_judge()
    return (root,)


def lighteval_run(root):
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    from qahub import lighteval_tasks

    with lighteval_tasks.custom_tasks_only():
        pipeline = Pipeline(tasks="qahub_limur|0", model=_scripted_model(root),
                            evaluation_tracker=EvaluationTracker(output_dir=str(root / "out")),
                            pipeline_parameters=PipelineParameters(launcher_type=ParallelismManager.NONE,
                                                                   custom_tasks_directory="qahub.lighteval_tasks",
                                                                   bootstrap_iters=0))
        pipeline.evaluate()
    scores = pipeline.get_results()["results"]["qahub_limur:0"]
    return scores["exact_match"], scores.get("judge_score"), scores.get("judge_coverage")


def run() -> list[dict]:
    return judge_rows("lighteval", "bench_limur_lighteval:lighteval_run")
