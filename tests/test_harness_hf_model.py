"""The harnesses guide's lm-eval block (docs/harnesses.md, `test: lm-eval-hf`), followed as written: `lm_eval --model hf` (lm-eval's Hugging Face model, which the
`harness` extra installs) on a qahub task, with a tiny GPT-2 of random weights and a byte-level tokenizer made here
(nothing is downloaded)."""

import json
import math
import os
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from guides import commands
from packaging.requirements import Requirement

from qahub import registry

pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")
pytest.importorskip("transformers", reason="--model hf needs the [harness] extra")

BIN = Path(sys.executable).parent


def _command(argv: list[str]) -> list[str]:
    """The guide's command in this environment: its script here, or ``python -m`` in a venv that has no script
    of its own for a package it sees among the system's."""
    script = BIN / argv[0]
    if script.exists():
        return [str(script), *argv[1:]]
    return [sys.executable, "-m", {"qahub": "qahub.cli", "lm_eval": "lm_eval", "inspect": "inspect_ai"}[argv[0]],
            *argv[1:]]


def _extra(name: str) -> list[Requirement]:
    """What ``pip install -e ".[name]"`` brings, qahub's own extras it names expanded."""
    declared = [Requirement(r) for r in metadata.requires("qahub") or []]
    found = []
    for requirement in declared:
        if requirement.marker and requirement.marker.evaluate({"extra": name}):
            if requirement.name == "qahub":
                found += [r for extra in sorted(requirement.extras) for r in _extra(extra)]
            else:
                found.append(requirement)
    return found


def test_the_harness_extra_brings_lm_evals_hf_model_and_every_tasks_scorer():
    harness = _extra("harness")
    [lm_eval] = [r for r in harness if r.name == "lm-eval"]
    assert {"api", "hf"} <= lm_eval.extras
    # what the tasks' process_results import: JEMHopQA's Sudachi and Levenshtein, Jeopardy's METEOR, sacreBLEU
    assert {"sudachipy", "Levenshtein", "scipy", "nltk", "pymorphy3", "sacrebleu"} <= {r.name for r in harness}
    hf = [Requirement(r) for r in metadata.requires("lm_eval") if "extra == \"hf\"" in r]
    assert {"transformers", "torch", "accelerate"} <= {r.name for r in hf}
    assert commands("lm-eval-hf")[0].startswith('pip install -e ".[harness]"')


def test_the_guides_lm_eval_block_runs_model_hf_on_a_tiny_local_model(tiny_model, tmp_path):
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    samples = f"{registry.samples_dir()}/"
    for line in commands("lm-eval-hf")[1:]:  # the first line is the install, which made this environment
        argv = [arg.replace("src/qahub/samples/", samples) for arg in shlex.split(line, comments=True)]
        argv = [f"pretrained={tiny_model}" if arg == "pretrained=MODEL" else arg for arg in argv]
        done = subprocess.run(_command(argv), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (line, done.stderr[-3000:])
    [results] = list((tmp_path / "results").rglob("results_*.json"))
    report = json.loads(results.read_text(encoding="utf-8"))
    assert report["config"]["model"] == "hf" and report["config"]["model_args"] == {"pretrained": str(tiny_model)}
    assert report["n-samples"]["qahub_jemhopqa"]["effective"] == 2
    scores = report["results"]["qahub_jemhopqa"]
    for metric in ("exact_match", "char_f1", "unparseable"):
        value = scores[f"{metric},none"]
        assert isinstance(value, float | int) and math.isfinite(value) and 0 <= value <= 1, (metric, scores)


def test_the_guides_inspect_block_runs_offline_on_a_tiny_local_model(tiny_model, tmp_path):
    """inspect's hf/ provider on a local model folder, HF_HUB_OFFLINE=1 as the guide sets it: every sample is
    generated (greedy: the provider refuses temperature 0 while it samples) and scored."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is the [inspect] extra")
    from inspect_ai.log import read_eval_log

    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "TOKENIZERS_PARALLELISM": "false"}
    env.pop("HF_HUB_OFFLINE", None)
    samples = f"{registry.samples_dir()}/"
    lines = commands("inspect-hf")
    assert any(line.startswith("HF_HUB_OFFLINE=1 inspect eval") for line in lines)
    for line in lines:
        words = [w.replace("src/qahub/samples/", samples).replace("MODEL_DIR", str(tiny_model))
                 for w in shlex.split(line, comments=True)]
        settings = dict(w.split("=", 1) for w in words[:next(i for i, w in enumerate(words) if "=" not in w)])
        argv = words[len(settings):]
        done = subprocess.run(_command(argv), cwd=tmp_path, env={**env, **settings}, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, (line, done.stderr[-3000:])
    [path] = list((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success", log.error and log.error.message
    assert log.eval.model == f"hf/{tiny_model}" and len(log.samples) == 2
    assert all(sample.error is None and sample.scores for sample in log.samples)
    scores = {score.name: next(iter(score.metrics.values())).value for score in log.results.scores}
    assert set(scores) == {"exact_match", "char_f1", "unparseable"}
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in scores.values()), scores
