#!/usr/bin/env bash
# Set-up: a venv .venv with qahub (editable) and its test extras, used by the README and by .ci/run.
# The harness extra needs torch (lm_eval --model hf). PyPI's Linux torch is the CUDA build (~5 GB more and
# minutes longer); PyTorch's CPU index serves 2.13.0+cpu, which pip prefers to PyPI's 2.13.0 when both are
# there. When that index cannot be reached, pip says so and goes on with its other sources at once
# (--retries 0, a short --timeout): a CPU wheel found there (e.g. a local --find-links) is used, else PyPI's.
# pip runs with -qq (errors only) where its warnings are not ours (the pip configuration's indexes, setuptools'
# editable-install notice); the torch step keeps its warnings, which say when the CPU index was not reached.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -qq --upgrade pip
python -m pip install --quiet --timeout 15 --retries 0 \
    --extra-index-url https://download.pytorch.org/whl/cpu "torch==2.13.0"
python -m pip install -qq -e ".[test]"
# the Every Eval Ever 0.3.0 schemas the suite validates `qahub report --hub-dataset`'s records against, read from
# the released wheel (it needs Python >= 3.12 and huggingface_hub < 2: fetched, never installed nor copied here)
python -m pip download -qq --no-deps --python-version 3.12 --only-binary=:all: every-eval-ever==0.3.0 \
    -d "${QAHUB_EEE_CACHE:-$HOME/.cache/qahub/every-eval-ever}"
