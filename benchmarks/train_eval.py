"""Train, then evaluate, measured (issue 43 item 5): one command that fine-tunes a chat model with TRL's
``SFTTrainer`` on a qahub ``sft`` config within a time budget, evaluates the base and the fine-tuned model on the
same held-out documents in the same harness, and runs ``qahub report`` on the two runs.

    python benchmarks/train_eval.py --data-dir ../shared/data/jemhopqa --out train-eval

A measurement of one fixed recipe, hence here rather than a ``qahub`` subcommand: every step is a public command a
user runs on their own (``qahub build``, ``qahub harness-tasks``, ``qahub pick-docs``, TRL, ``lm_eval``,
``qahub report``), and this script only chains them and times each phase.

- Data: ``qahub build jemhopqa`` of the given JEMHopQA files; training rows: the ``sft`` config's rows of
  ``qahub_jemhopqa`` (the train split, decontaminated against the dev set), shuffled (seed 0), the first ``--rows``.
- Model: SmolLM2-135M-Instruct (``qahub models fetch smollm2``) unless ``--model``; LoRA (``peft``) on every linear
  layer, merged into the weights when saved, so the folder loads in lm-eval as a plain model. Training stops at
  ``--budget`` minutes of wall time even when its steps are not done.
- Evaluation: ``lm_eval --model hf --apply_chat_template`` on ``qahub_jemhopqa`` (JEMHopQA v1.2 dev, never trained
  on), the same ``--docs`` documents (``qahub pick-docs``) for both models, greedy, the same batch size.
- ``qahub report base=... tuned=... --baseline base``; the paired differences are printed and, with the phases'
  seconds and the training loss, written to ``OUT/train_eval.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _common beside it, however this script is loaded
from _common import qahub  # noqa: E402

TASK, CORPUS = "qahub_jemhopqa", "jemhopqa"
# the linear layers of a decoder layer of Llama-style models (SmolLM2, Gemma 3): what LoRA adapts
LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="JEMHopQA's files (upstream layout)")
    parser.add_argument("--out", required=True, help="folder for the export, model, runs, report")
    parser.add_argument("--model", help="a chat model's transformers folder (default: qahub models fetch smollm2)")
    parser.add_argument("--rows", type=int, default=256, help="training rows (default 256)")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=8, help="training batch size")
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate (LoRA)")
    parser.add_argument("--rank", type=int, default=16, help="LoRA rank; 0: full fine-tuning")
    parser.add_argument("--layers", type=int, default=8,
                        help="LoRA on the top N decoder layers only (0: all): backward stops below them")
    parser.add_argument("--budget", type=float, default=28.0, help="training wall-time limit, minutes (default 28)")
    parser.add_argument("--docs", type=int, default=120, help="held-out documents evaluated (default: all 120)")
    parser.add_argument("--eval-batch", type=int, default=8, help="lm_eval --batch_size")
    parser.add_argument("--max-gen-toks", type=int, help="cap on new tokens (default: the task's own)")
    return parser.parse_args(argv)


@contextmanager
def phase(seconds: dict, name: str):
    start = time.perf_counter()
    print(f"train_eval: {name} ...", flush=True)
    yield
    seconds[name] = round(time.perf_counter() - start, 1)
    print(f"train_eval: {name} took {seconds[name]} s", flush=True)


def run(*command: str, capture: bool = False) -> str:
    """Run a command (a failure stops everything, naming it); its stdout when ``capture``."""
    print("$ " + shlex.join(command), flush=True)
    done = subprocess.run(command, check=False, text=True, stdout=subprocess.PIPE if capture else None)
    if done.returncode:
        raise SystemExit(f"train_eval: {command[0]} {command[1]} failed (exit {done.returncode})")
    return done.stdout if capture else ""


def samples(export: Path, n: int) -> str:
    """lm-eval's ``--samples`` JSON of ``n`` documents, as ``qahub pick-docs`` prints it."""
    printed = qahub("pick-docs", TASK, "--n", str(n), "--location", str(export))
    line = next(line for line in printed.splitlines() if line.startswith("lm_eval --samples "))
    return shlex.split(line)[-1]


def training_rows(export: Path, rows: int):
    """The first ``rows`` of the ``sft`` rows of ``TASK``, shuffled with seed 0."""
    import datasets

    train = datasets.load_dataset(str(export), "sft", split="train")
    train = train.filter(lambda row: row["task"] == TASK).shuffle(seed=0)
    return train.select(range(min(rows, len(train))))


class Budget:
    """A ``TrainerCallback`` stopping training once ``minutes`` of wall time have passed."""

    def __new__(cls, minutes: float):
        from transformers import TrainerCallback

        class _Budget(TrainerCallback):
            def on_train_begin(self, args, state, control, **kwargs):
                self.start = time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                if time.perf_counter() - self.start > minutes * 60:
                    control.should_training_stop = True

        return _Budget()


def trainer(model: str, rows, out: Path, args, **options):
    """An ``SFTTrainer`` of ``model`` on ``rows`` (LoRA of rank ``args.rank`` unless 0), saving nothing itself."""
    from trl import SFTConfig, SFTTrainer

    steps = max(1, math.ceil(len(rows) * args.epochs / args.batch))
    settings = dict(output_dir=str(out), max_steps=steps, per_device_train_batch_size=args.batch,
                    learning_rate=args.lr, lr_scheduler_type="constant_with_warmup", warmup_steps=min(5, steps // 10),
                    logging_steps=1, report_to="none", save_strategy="no", use_cpu=True, bf16=False, seed=0,
                    gradient_checkpointing=False, max_length=1024, dataloader_num_workers=0)
    peft = None
    if args.rank:
        from peft import LoraConfig

        peft = LoraConfig(r=args.rank, lora_alpha=2 * args.rank, lora_dropout=0.0, target_modules=LINEAR,
                          task_type="CAUSAL_LM", layers_to_transform=top_layers(model, args.layers))
    return SFTTrainer(model=model, train_dataset=rows, args=SFTConfig(**{**settings, **options}), peft_config=peft,
                      callbacks=[Budget(args.budget)])


def top_layers(model: str, n: int) -> list[int] | None:
    """The indices of the top ``n`` decoder layers of ``model`` (None: every layer)."""
    from transformers import AutoConfig

    total = AutoConfig.from_pretrained(model).num_hidden_layers
    return list(range(max(0, total - n), total)) if n else None


def train(model: str, rows, out: Path, args, **options) -> dict:
    """Train, save a plain transformers folder (LoRA merged) with the tokenizer at ``out``; the losses."""
    sft = trainer(model, rows, out / "checkpoints", args, **options)
    sft.train()
    trained = sft.model.merge_and_unload() if args.rank else sft.model
    trained.save_pretrained(out)
    sft.processing_class.save_pretrained(out)
    losses = [entry["loss"] for entry in sft.state.log_history if "loss" in entry]
    return {"steps": sft.state.global_step, "rows_seen": sft.state.global_step * args.batch, "losses": losses,
            "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None}


def evaluate(folder, tasks: Path, picked: str, out: Path, args):
    """``lm_eval --model hf --apply_chat_template`` of ``folder`` on the picked documents of ``TASK``."""
    command = ["lm_eval", "--model", "hf", "--model_args", f"pretrained={folder},dtype=float32", "--device", "cpu",
               "--apply_chat_template", "--include_path", str(tasks), "--tasks", TASK, "--samples", picked,
               "--batch_size", str(args.eval_batch), "--log_samples", "--output_path", str(out)]
    if args.max_gen_toks:
        command += ["--gen_kwargs", f"max_gen_toks={args.max_gen_toks}"]
    run(*command)


def scores(report: Path) -> dict:
    """``{run: {metric: [value, interval]}}`` of ``TASK`` in ``report.json``."""
    found = json.loads((report / "report.json").read_text(encoding="utf-8"))["tasks"][TASK]["scores"]
    return {run: {metric: [s["value"], s["ci"]] for metric, s in metrics.items()} for run, metrics in found.items()}


def comparisons(report: Path) -> list[dict]:
    """Each paired comparison in ``report.json``: metric, delta, interval, p (Holm), star, the reason for none."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            if "delta" in node and "p" in node and "star" in node:
                found.append({"where": "/".join(path), **{k: node.get(k) for k in (
                    "delta", "ci", "p", "p_holm", "test", "n", "units", "star", "no_star", "underpowered")}})
            for key, value in node.items():
                walk(value, path + [str(key)])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, path + [str(index)])

    walk(json.loads((report / "report.json").read_text(encoding="utf-8")), [])
    return found


def main(argv=None) -> int:
    args = parse(argv)
    out, seconds = Path(args.out).resolve(), {}
    out.mkdir(parents=True, exist_ok=True)
    export, tasks = out / "export", out / "tasks"
    with phase(seconds, "export"):
        if not (export / "sft").is_dir():
            qahub("build", CORPUS, "--data-dir", str(args.data_dir), "--out", str(export), capture=False)
        qahub("harness-tasks", "--out", str(tasks), "--dataset", f"{CORPUS}={export}", "--overwrite", capture=False)
        picked = samples(export, args.docs)
    base = args.model or qahub("models", "fetch", "smollm2").strip().splitlines()[-1]
    with phase(seconds, "train"):
        rows = training_rows(export, args.rows)
        trained = train(base, rows, out / "model", args)
    for name, folder in (("base", base), ("tuned", out / "model")):
        with phase(seconds, f"evaluate {name}"):
            evaluate(folder, tasks, picked, out / "runs" / name, args)
    with phase(seconds, "report"):
        qahub("report", f"base={out / 'runs' / 'base'}", f"tuned={out / 'runs' / 'tuned'}", "--out",
              str(out / "report"), "--baseline", "base", capture=False)
    summary = {"model": str(base), "rows": len(rows), "docs": args.docs, "threads": os.environ.get("OMP_NUM_THREADS"),
               "settings": {k: v for k, v in vars(args).items() if k not in ("out", "data_dir", "model")},
               "seconds": seconds, "training": trained, "scores": scores(out / "report"),
               "comparisons": comparisons(out / "report")}
    (out / "train_eval.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    for run_name, found in summary["scores"].items():
        print(f"train_eval: {run_name}: {found}")
    for c in summary["comparisons"]:
        print(f"train_eval: {c['where']}: delta {c['delta']} {c['ci']} p {c['p']} star {c['star']}")
    print(f"train_eval: phases {seconds}; loss {trained['loss_first']} -> {trained['loss_last']} "
          f"({trained['steps']} steps); {out / 'train_eval.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
