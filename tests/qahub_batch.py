"""Runs ``qahub`` commands one after another in this one process, as the installed ``qahub`` would run each:
reads a JSON list (the arguments) a line on stdin, answers a JSON line ``{code, stdout, stderr}``. ``Batch`` is
the tests' side (``qahub`` itself is still run as a process of its own where a test is about the process: its
address-space limit, its working folder, the installed entry point).

The tests that run ``qahub`` dozens of times (tests/test_predictions.py, tests/test_report.py) use it so that
the imports and the metrics' tokenizers and dictionaries are loaded once, not once per command (8 s of CPU per
Jeopardy command, nearly all of it loading).
``qahub.cli.main`` restores what it changes (signal handlers, log level, warning filters: it "may run inside a
longer program"). Each command's stdout and stderr are the process's own file descriptors 1 and 2, pointed at
files while it runs, so what a library writes to them directly is caught too; its stdin is /dev/null.
"""

from __future__ import annotations

import json
import locale
import os
import select
import subprocess
import sys
import tempfile
import traceback


def _exit_status(stop: SystemExit) -> int:
    """The exit status the interpreter gives for ``SystemExit(code)`` (argparse's --help and usage errors)."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def _call(argv: list[str]) -> int:
    from qahub.cli import main

    sys.argv = ["qahub", *argv]
    try:
        return main(argv)
    except SystemExit as stop:
        return _exit_status(stop)
    except BaseException:  # what the interpreter prints for an uncaught exception, and its status
        traceback.print_exc()
        return 1


def _text(file) -> str:
    """The file's bytes as ``subprocess.run(..., text=True, errors="backslashreplace")`` reads them."""
    file.seek(0)
    text = file.read().decode(locale.getpreferredencoding(False), errors="backslashreplace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def run(argv: list[str]) -> dict:
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            code = _call(argv)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        return {"code": code, "stdout": _text(out), "stderr": _text(err)}


def serve():
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for line in requests:
        replies.write(json.dumps(run(json.loads(line))) + "\n")
        replies.flush()


class Batch:
    """One ``python tests/qahub_batch.py``, started at the first command: ``run(argv)`` is
    ``(exit status, stdout, stderr)`` of ``qahub *argv`` run there; ``stop()`` ends it."""

    def __init__(self, **environ: str):
        self.environ, self.process = environ, None  # environ: set for its commands, on top of os.environ

    def run(self, argv: list[str], timeout: float = 600) -> tuple[int, str, str]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True, encoding="utf-8",
                                            env={**os.environ, **self.environ})
        self.process.stdin.write(json.dumps(argv) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stop()
            raise AssertionError(f"tests/qahub_batch.py gave no answer to qahub {' '.join(argv)}")
        done = json.loads(line)
        return done["code"], done["stdout"], done["stderr"]

    def stop(self):
        if self.process is not None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


if __name__ == "__main__":
    serve()
