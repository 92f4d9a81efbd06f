"""Train, then evaluate (issue 43 item 5): ``benchmarks/train_eval.py`` end to end on JEMHopQA's bundled sample with
a tiny random Llama (the real recipe's architecture: LoRA on the top decoder layers' projections), a few steps and
two documents; the real run on SmolLM2-135M-Instruct and the real JEMHopQA is not in the suite (docs/training.md
gives its figures)."""

import importlib.util
import json
import math
from pathlib import Path

import pytest

from qahub import registry

pytest.importorskip("trl", reason="TRL is in the [test] extra")
pytest.importorskip("peft", reason="peft is in the [test] extra")
pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "train_eval.py"
# a minimal chat template (the tokenizer's eos ends the assistant's turn, as <|im_end|> does SmolLM2's)
TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] }}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}{{ '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def train_eval():
    spec = importlib.util.spec_from_file_location("train_eval", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tiny_llama(tiny_model, tmp_path_factory) -> Path:
    """A 3-layer Llama with random weights, the suite's tiny byte-level tokenizer and a chat template."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template = TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                         bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def gradients():
    """Autograd on: a harness run earlier in the same process (lm-eval's hf model) may have switched it off."""
    import torch

    before = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    yield
    torch.set_grad_enabled(before)


def _documents(run: Path) -> list:
    (samples,) = run.rglob("samples_qahub_jemhopqa_*.jsonl")
    return sorted(json.loads(line)["doc_id"] for line in samples.read_text(encoding="utf-8").splitlines())


def test_train_then_evaluate_runs_end_to_end(train_eval, tiny_llama, tmp_path, gradients):
    out = tmp_path / "out"
    assert train_eval.main(["--data-dir", str(registry.samples_dir("jemhopqa")), "--out", str(out), "--model",
                            str(tiny_llama), "--rows", "4", "--batch", "2", "--lr", "1e-2", "--rank", "4",
                            "--layers", "1", "--docs", "2", "--eval-batch", "1", "--max-gen-toks", "4"]) == 0
    summary = json.loads((out / "train_eval.json").read_text(encoding="utf-8"))
    assert list(summary["seconds"]) == ["export", "train", "evaluate base", "evaluate tuned", "report"]
    training = summary["training"]
    assert training["steps"] == 2 and len(training["losses"]) == 2
    assert all(math.isfinite(loss) for loss in training["losses"])
    # the LoRA is merged: a plain folder lm-eval loaded, whose top layer changed and whose bottom layers did not
    assert not (out / "model" / "adapter_config.json").exists()
    from safetensors.torch import load_file

    before, after = (load_file(folder / "model.safetensors") for folder in (tiny_llama, out / "model"))
    changed = {name for name in before if not before[name].equal(after[name])}
    assert changed and all(name.startswith("model.layers.2.") for name in changed), sorted(changed)
    # the same held-out documents in both runs, and the report compares them
    documents = _documents(out / "runs" / "base")
    assert documents == _documents(out / "runs" / "tuned") and len(documents) == 2
    compared = {c["where"].rsplit("/", 1)[-1]: c for c in summary["comparisons"]
                if c["where"].startswith("tasks/qahub_jemhopqa/comparisons/tuned/")}
    assert {"exact_match", "char_f1"} <= set(compared)
    assert compared["exact_match"]["n"] == 2


def test_training_stops_at_its_time_budget(train_eval, tiny_llama, tmp_path, gradients, sample_exports):
    args = train_eval.parse(["--data-dir", "-", "--out", "-", "--rows", "8", "--batch", "2", "--rank", "4",
                             "--layers", "1", "--budget", "0"])
    rows = train_eval.training_rows(sample_exports["jemhopqa"], args.rows)
    assert set(rows["task"]) == {"qahub_jemhopqa"} and len(rows) == 4  # the sample's four training questions
    trained = train_eval.train(str(tiny_llama), rows, tmp_path / "model", args)
    assert trained["steps"] == 1  # of 2: the budget ran out after the first
