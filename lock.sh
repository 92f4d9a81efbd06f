#!/usr/bin/env bash
# requirements.lock: the exact versions `bash install.sh` and .ci/run install (qahub's `test` extra, which holds
# every other extra CI needs, and all they need in turn), for Linux and Python 3.11–3.12, written by uv's resolver.
#   bash lock.sh            after editing pyproject.toml's dependencies: keeps every pin it still allows, resolves
#                           only what changed (tests/test_lock.py fails until this is re-run)
#   bash lock.sh --upgrade  tries the newest versions pyproject.toml allows; then `bash install.sh` and the suite,
#                           and commit requirements.lock only if they pass (else `git checkout requirements.lock`)
# torch is the CPU build, pinned by torch-cpu.txt: this machine's pip finds it in /opt/wheels (for Python 3.11);
# elsewhere install.sh takes it from PyTorch's CPU index. PyPI's Linux torch is the CUDA build (several GB more).
set -euo pipefail
cd "$(dirname "$0")"
# uv at the lock's own version (a few seconds from PyPI), in a venv of its own unless it is on the PATH already
if ! command -v uv >/dev/null; then
    tools="${QAHUB_TOOLS_VENV:-$HOME/.cache/qahub/uv-venv}"
    [ -x "$tools/bin/uv" ] || python3 -m venv "$tools"
    "$tools/bin/python" -m pip install -qq "$(grep '^uv==' requirements.lock)"
    PATH="$tools/bin:$PATH"
fi
# torch==2.13.0+cpu is on no PyPI page: this machine image's /opt/wheels holds it, else PyTorch's CPU index does
torch_source=(--torch-backend cpu)
[ -d /opt/wheels ] && torch_source=(--find-links /opt/wheels)
# --universal: one file with markers where Python 3.11 and 3.12 need different releases; --no-emit-package: the
# project itself is installed editable by install.sh
uv pip compile pyproject.toml --extra test --universal --python-version 3.11 \
    --constraint torch-cpu.txt "${torch_source[@]}" --no-emit-package qahub \
    --custom-compile-command "bash lock.sh" -o requirements.lock "$@" >/dev/null
