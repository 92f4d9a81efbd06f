"""TRL's ``SFTTrainer`` on the training configs (issue 38): the suite's tiny random GPT-2 (``tiny_model``, with a chat
template set here) trains a few steps on ``load_dataset(export, "sft")`` of two corpora and on a ``messages``
config, offline; the collator masks every prompt token; the loss on a repeated batch goes down; the trained
folder generates through lm-eval's ``hf`` model on the matching qahub task; the training guide's example runs."""

import shutil
from pathlib import Path

import datasets
import pytest
from guides import block

from qahub import harness

pytest.importorskip("trl", reason="TRL is in the [test] extra")
pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")

IGNORE = -100  # the label of a token that carries no loss
# a minimal chat template; {% generation %} marks the assistant's tokens for TRL's assistant_only_loss
TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}{{ '<|assistant|>\n' }}"
    "{% generation %}{{ message['content'] + eos_token }}{% endgeneration %}{{ '\n' }}"
    "{% else %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


@pytest.fixture(scope="module", autouse=True)
def gradients():
    """Autograd on: a harness run earlier in the same process (lm-eval's hf model) may have switched it off."""
    import torch

    before = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    yield
    torch.set_grad_enabled(before)


@pytest.fixture(scope="module")
def chat_model(tiny_model, tmp_path_factory) -> Path:
    """The suite's tiny GPT-2 with a chat template."""
    from transformers import AutoTokenizer

    folder = Path(shutil.copytree(tiny_model, tmp_path_factory.mktemp("chat") / "model"))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(folder)
    return folder


def _trainer(model, dataset, out, **options):
    from trl import SFTConfig, SFTTrainer

    settings = dict(output_dir=str(out), max_steps=5, per_device_train_batch_size=4, learning_rate=1e-2,
                    logging_steps=1, report_to="none", save_strategy="no", max_length=2048, seed=0, use_cpu=True,
                    bf16=False, gradient_checkpointing=False)
    args = SFTConfig(**{**settings, **options})
    return SFTTrainer(model=str(model), train_dataset=dataset, args=args)


def _losses(trainer):
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def _sft(sample_exports, *corpora):
    return datasets.concatenate_datasets([datasets.load_dataset(str(sample_exports[c]), "sft", split="train")
                                         for c in corpora])


def _repeated(rows, n=4, times=6):
    return rows.select([i % n for i in range(n * times)])


@pytest.fixture(scope="module")
def sft_trained(sample_exports, chat_model, tmp_path_factory):
    """SFTTrainer on the sft rows of JEMHopQA and Jeopardy (the first four, repeated), trained and saved."""
    rows = _sft(sample_exports, "jemhopqa", "jeopardy")
    corpus = ["jemhopqa"] * (len(rows) - len(_sft(sample_exports, "jeopardy"))) + ["jeopardy"] * len(rows)
    shortest = sorted(range(len(rows)), key=lambda i: len(rows[i]["prompt"][0]["content"]))
    batch = rows.select([i for name in ("jemhopqa", "jeopardy") for i in [j for j in shortest if corpus[j] == name][:2]])
    out = tmp_path_factory.mktemp("sft-trained")
    trainer = _trainer(chat_model, _repeated(batch, n=len(batch)), out)
    trainer.train()
    trainer.save_model(str(out))
    return trainer, batch, out


def _ids(tokenizer, messages, **options) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, tokenize=True, **options)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def test_the_collator_masks_every_prompt_token_and_keeps_the_completion(sft_trained):
    trainer, batch, _ = sft_trained
    tokenizer = trainer.processing_class
    collated = trainer.data_collator([trainer.train_dataset[i] for i in range(len(batch))])
    for i, row in enumerate(batch):
        prompt = _ids(tokenizer, row["prompt"], add_generation_prompt=True)
        full = _ids(tokenizer, row["prompt"] + row["completion"])
        assert len(full) > len(prompt) > 10
        labels = collated["labels"][i].tolist()
        assert all(label == IGNORE for label in labels[:len(prompt)]), f"row {i}: a prompt token carries loss"
        kept = [label for label in labels[len(prompt):len(full)] if label != IGNORE]
        assert tokenizer.decode(kept).startswith(row["completion"][0]["content"]), f"row {i}"


def test_the_loss_on_a_repeated_batch_goes_down(sft_trained):
    losses = _losses(sft_trained[0])
    assert len(losses) >= 4 and losses[-1] < losses[0] * 0.9, losses


def test_the_trained_folder_generates_through_lm_evals_hf_model_on_the_qahub_task(sft_trained, sample_exports,
                                                                                   tmp_path):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    folder = tmp_path / "tasks"
    harness.write_task_folder(folder, {"jemhopqa": sample_exports["jemhopqa"]})
    results = simple_evaluate(model="hf", model_args=f"pretrained={sft_trained[2]}", tasks=["qahub_jemhopqa"],
                              task_manager=TaskManager(include_path=str(folder), include_defaults=False),
                              limit=2, device="cpu", gen_kwargs="max_gen_toks=8")
    assert "exact_match,none" in results["results"]["qahub_jemhopqa"]


def test_assistant_only_loss_on_a_messages_config(sample_exports, chat_model, tmp_path):
    rows = datasets.load_dataset(str(sample_exports["doc2dial"]), "messages", split="train")
    shortest = min(range(len(rows)), key=lambda i: sum(len(m["content"]) for m in rows[i]["messages"]))
    rows = rows.select([shortest])
    trainer = _trainer(chat_model, _repeated(rows, n=1, times=2), tmp_path, assistant_only_loss=True, max_steps=1,
                       per_device_train_batch_size=2, max_length=None)
    collated = trainer.data_collator([trainer.train_dataset[0]])
    labels = collated["labels"][0].tolist()
    kept = trainer.processing_class.decode([label for label in labels if label != IGNORE])
    messages = rows[0]["messages"]
    assert len(labels) == len(_ids(trainer.processing_class, messages))  # the whole conversation, not cut
    for message in messages:
        inside = message["content"] in kept
        assert inside == (message["role"] == "assistant"), (message["role"], message["content"][:60])
    trainer.train()
    assert _losses(trainer)


def test_the_training_guides_trl_example_runs(sample_exports, chat_model, tmp_path, monkeypatch):
    code = block("trl-sft").code  # docs/training.md, copied in README.md
    assert len(code.strip().splitlines()) <= 10
    monkeypatch.chdir(tmp_path)
    code = code.replace('"qahub-hub/jemhopqa"', repr(str(sample_exports["jemhopqa"])))
    fetched = 'str(fetch(MODELS["smollm2"]))'  # the real SmolLM2 is tests/test_real_models.py's; here the tiny one
    assert fetched in code
    code = code.replace(fetched, repr(str(chat_model)))
    exec(compile(code, "docs/training.md", "exec"), {})
    assert (tmp_path / "sft-model" / "config.json").is_file()
