#!/usr/bin/env bash
# Set-up: a venv .venv with qahub (editable) and its test extras, used by the README and by .ci/run.
# It resolves nothing: uv installs the exact versions of requirements.lock (written by `bash lock.sh`), then qahub
# itself with --no-deps. `PYTHON=python3.12 bash install.sh` picks the interpreter (3.11 or 3.12; default python3).
# torch is the lock's CPU build (2.13.0+cpu; PyPI's Linux torch is the CUDA build, several GB more): taken from
# /opt/wheels where that folder holds it for this Python (this machine's image: Python 3.11 only), else from
# PyTorch's CPU index (uv's --torch-backend cpu), which must then be reachable.
# A line of progress at least every 20 s, also while uv downloads without printing.
set -euo pipefail
cd "$(dirname "$0")"
say() { printf 'install.sh [%3ds] %s\n' "$SECONDS" "$*"; }
(while sleep 20; do say "still installing"; done) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null' EXIT
# uv must not fetch a Python of its own: the venv's is used
export UV_PYTHON_DOWNLOADS=never
say "creating .venv with $("${PYTHON:-python3}" --version)"
"${PYTHON:-python3}" -m venv .venv
. .venv/bin/activate
say "installing uv"
python -m pip install -qq "$(grep '^uv==' requirements.lock)"
torch_source=(--torch-backend cpu)
if [ -d /opt/wheels ] && grep '^torch==' requirements.lock |
    uv pip install -q --dry-run --offline --no-deps --find-links /opt/wheels -r - 2>/dev/null; then
    torch_source=(--find-links /opt/wheels)
fi
say "installing requirements.lock (torch from: ${torch_source[*]})"
# --compile-bytecode: every process would otherwise compile each module it imports from source again wherever
# PYTHONDONTWRITEBYTECODE is set (as on CI's and this project's machines): `import datasets` 4.7 s -> 1.6 s
uv pip sync --no-progress --compile-bytecode "${torch_source[@]}" requirements.lock || {
    say "requirements.lock was not installed: $(grep -o '^torch==.*' requirements.lock) comes from" \
        "/opt/wheels or PyTorch's CPU index: where neither serves this Python, use one that has it (on this" \
        "machine's image: PYTHON=python3.11 bash install.sh)"
    exit 1
}
say "installing qahub (editable, --no-deps)"
uv pip install -q --no-progress --no-deps --no-build-isolation -e .
python -m compileall -q -j 0 src loaders metrics > /dev/null  # qahub's own modules, for the same reason
# the Every Eval Ever 0.3.0 schemas the suite validates `qahub report --hub-dataset`'s records against, read from
# the released wheel (it needs Python >= 3.12 and huggingface_hub < 2: fetched, never installed nor copied here)
say "fetching the Every Eval Ever 0.3.0 wheel (schemas for the tests)"
python -m pip download -qq --no-deps --python-version 3.12 --only-binary=:all: every-eval-ever==0.3.0 \
    -d "${QAHUB_EEE_CACHE:-$HOME/.cache/qahub/every-eval-ever}"
say "done: . .venv/bin/activate"
