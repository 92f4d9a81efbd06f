"""What the command line prints and how it ends: one-line errors, Ctrl-C and SIGTERM, a closed stdout pipe,
--quiet, and plain tables."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
import warnings

# what scrub removes from a message: Hub tokens, and the password of a URL (https://user:secret@mirror)
TOKEN_PATTERN = re.compile(r"hf_[A-Za-z0-9]{8,}")
URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.I)


def say_error(args, message: str, unexpected: bool = False):
    """One line on stderr; with --debug the traceback before it, else (for an unexpected error) how to get it."""
    if args.debug:
        import traceback

        traceback.print_exc()
    hint = " (rerun with --debug for the traceback)" if unexpected and not args.debug else ""
    print(f"qahub {args.command}: error: {message}{hint}", file=sys.stderr)


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``qahub list | head -1``), not some other broken pipe."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # no real file behind sys.stdout
        return False


def flush_stdout():
    """Flush stdout; when its reader has gone, put /dev/null in its place, so that the interpreter's own flush
    at exit does not fail again (the recipe of Python's ``signal`` documentation, "Note on SIGPIPE")."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM, raised where the program is so that every ``finally`` removes its temporary files."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def signals_interrupt():
    """SIGINT and SIGTERM raise ``Interrupted``; a second signal during the clean-up is ignored, so the clean-up
    ends. Outside the main thread (signals cannot be set there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.getsignal(signum) for signum in wanted}

    def stop(signum, frame):
        for other in wanted:
            signal.signal(other, signal.SIG_IGN)
        raise Interrupted(signum)

    for signum in wanted:
        signal.signal(signum, stop)
    try:
        yield
    except KeyboardInterrupt as err:  # raised by other code (e.g. a library's own SIGINT handling)
        if isinstance(err, Interrupted):
            raise
        raise Interrupted(signal.SIGINT) from None
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def explain(err: BaseException) -> str:
    top = (err.name or "").split(".")[0] if isinstance(err, ModuleNotFoundError) else ""
    extra = extra_of(top) if top else None
    if extra:
        return f"this needs the optional package {top!r}: pip install -e \".[{extra}]\" (in the qahub clone)"
    return scrub(str(err))


def scrub(text: str, token=None) -> str:
    """``text`` without Hub tokens (the one given, the one huggingface_hub would use, any hf_...) or URL passwords."""
    for secret in (token, configured_token()):
        if isinstance(secret, str) and len(secret) >= 8:
            text = text.replace(secret, "***")
    text = URL_CREDENTIALS.sub(r"\1***@", text)
    return TOKEN_PATTERN.sub("hf_***", text)


def configured_token():
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:  # no token configured, or an unreadable token file: nothing to scrub
        return None


def extra_of(module: str) -> str | None:
    """The first extra of qahub's installed metadata (pyproject's optional-dependencies, in order) that installs
    the distribution of the import name ``module``; None when none does."""
    from importlib import metadata

    try:
        requires = metadata.requires("qahub") or []
    except metadata.PackageNotFoundError:
        return None
    wanted = module.lower().replace("-", "_")
    for requirement in requires:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group().lower().replace("-", "_").replace(".", "_")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", requirement)
        if extra and name == wanted != "qahub":
            return extra.group(1)
    return None


@contextlib.contextmanager
def quiet_output(quiet: bool):
    """With --quiet: no progress bars, no info logs, no warnings; only errors and the result are printed.
    Warning filters and the root log level are restored afterwards (main may run inside a longer program)."""
    if not quiet:
        yield
        return
    silence()
    root = logging.getLogger()
    level = root.level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root.setLevel(logging.ERROR)
        try:
            yield
        finally:
            root.setLevel(level)


# read by datasets and huggingface_hub when they are imported, so that a command that never needs them
# (list, --help) does not import them just to silence them
QUIET_ENV = {"HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "DATASETS_VERBOSITY": "error"}


def silence():
    os.environ.update(QUIET_ENV)
    logging.getLogger("evaluate").setLevel(logging.ERROR)
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
    if "huggingface_hub" in sys.modules:
        import huggingface_hub.utils

        huggingface_hub.utils.disable_progress_bars()



def print_rows(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for line in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip())

