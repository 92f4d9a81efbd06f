"""The LIMUR judge's settings, each declared once: ``compute``'s keyword ``judge_<name>``, the flag
``--judge-<name>`` of ``qahub evaluate limur``, the variable ``QAHUB_JUDGE_<NAME>`` read by ``compute`` and the
lm-eval task, their help and defaults are all made from ``SETTINGS``. Standard library only (the command line
imports it for ``qahub --help``)."""

import decimal
import math
import numbers
import os
import textwrap


class Setting:
    """One setting. ``kind``: text, choice (of ``choices``), secret (the API key: the command line takes the name
    of a variable holding it, never the key), switch (off unless set), path, integer (>= ``least``) or seconds
    (finite, > 0 when ``strict`` else >= 0). ``env``: whether ``QAHUB_JUDGE_<NAME>`` is read."""

    def __init__(self, name, kind, default, help, env=True, choices=(), least=0, strict=False, flag=None):
        self.name, self.kind, self.default, self.help = name, kind, default, help
        self.choices, self.least, self.strict = tuple(choices), least, strict
        self.keyword = f"judge_{name}"
        self.flag = f"--judge-{(flag or name).replace('_', '-')}"
        self.dest = self.flag[2:].replace("-", "_")  # argparse's attribute for the flag
        self.env = f"QAHUB_JUDGE_{name.upper()}" if env else None

    def parse(self, text):
        """The value a command-line or environment text gives; a ValueError says what is expected."""
        if self.kind == "integer":
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"expected an integer >= {self.least}, got {text!r}") from None
            if not self.in_range(value):
                raise ValueError(f"expected an integer >= {self.least}, got {value}")
            return value
        if self.kind == "seconds":
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not self.in_range(value):
                raise ValueError(f"expected a finite number of seconds {self.bound}, got {text!r}")
            return value
        if self.kind == "choice" and text not in self.choices:
            raise ValueError(f"expected one of {', '.join(self.choices)}, got {text!r}")
        return text

    def check(self, value):
        """A value given to ``compute``, checked; a ValueError names the keyword."""
        if self.kind == "integer":
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and self.in_range(value)
            what = "a positive integer" if self.least == 1 else "a non-negative integer"
        elif self.kind == "seconds":
            number = as_float(value)
            ok = number is not None and self.in_range(number)
            what = f"a {'positive' if self.strict else 'non-negative'} number of seconds"
        else:
            return value
        if not ok:
            raise ValueError(f"{self.keyword} must be {what}, got {value!r}")
        return value

    def in_range(self, number):
        """Whether an integer or a number of seconds is in the setting's range (``least``; finite, ``bound``)."""
        if self.kind == "integer":
            return number >= self.least
        return math.isfinite(number) and (number > 0 if self.strict else number >= 0)

    @property
    def bound(self):
        return "> 0" if self.strict else ">= 0"

    def range_text(self):
        if self.kind == "integer":
            return f"; an integer >= {self.least}"
        if self.kind == "seconds":
            return f"; finite, {self.bound}"
        return ""

    def default_text(self):
        """The default as the help and the docs say it: the variable first, where one is read."""
        default = "unset" if self.default is None else str(self.default)
        return f"${self.env}, else {default}" if self.env else default


# MERA's variables (its lm-eval fork, benchmark_tasks/mera_judge.py), read by the lm-eval task only, last
MERA_ENV = {"url": "LM_EVAL_JUDGE_API_BASE", "model": "LM_EVAL_JUDGE_MODEL"}
MERA_KEYS = ("OPENAI_API_KEY", "LM_EVAL_JUDGE_API_KEY")  # compute_llm_judge's order; sent to MERA's address only
PRECEDENCE = "--judge-* flags (compute's judge_* keywords) > $QAHUB_JUDGE_* > $LM_EVAL_JUDGE_*"


SETTINGS = (
    Setting("url", "text", None, "OpenAI-compatible endpoint: http://host:port, .../v1 or .../v1/chat/completions; "
            "a user:password@ in it is sent as Basic auth, masked everywhere and never cached; the URL and the "
            f"model come from one place (precedence: {PRECEDENCE})"),
    Setting("model", "text", None, "judge model name; needs a judge URL"),
    Setting("prompt", "choice", "seed", "seed: qahub's prompt, grades 1/0.5/0; mera: MERA's judge exactly (its "
            "prompt as one user message, temperature 0, max_tokens 256, the last number of the reply divided by 2 "
            "and clamped to [0, 1], a reply without a number unparseable; the best grade over MERA's answer "
            "candidates)", choices=("seed", "mera")),
    Setting("api_key", "secret", None, "sent as a bearer token; never over plain http to a host that is not "
            "loopback unless judge_allow_insecure_http"),
    Setting("allow_insecure_http", "switch", False, "allow sending the API key or the URL's user and password over plain http to a host that is "
            "not loopback", env=False),
    Setting("concurrency", "integer", 4, "requests at a time", least=1),
    Setting("timeout", "seconds", 60.0, "seconds a whole request may take", strict=True),
    Setting("retries", "integer", 3, "retries of a failed request", least=0),
    Setting("backoff", "seconds", 1.0, "first retry wait in seconds, doubling"),
    Setting("cache_file", "path", None, "JSON Lines file of judge replies, read and updated (checked before the "
            "first request; two runs sharing it merge their entries)", env=False, flag="cache"),
)
BY_NAME = {setting.name: setting for setting in SETTINGS}


def resolve(given=None, fallback=None, environ=None, mera=False, flags=False):
    """``{name: value}`` of every setting, each from the first of: ``given[name]`` when not None,
    ``QAHUB_JUDGE_<NAME>`` when set, MERA's ``LM_EVAL_JUDGE_*`` when ``mera`` (the lm-eval task), ``fallback[name]``
    when not None, the declared default. The URL and the model must come from one of the first three (else a
    ValueError naming both: a URL of one judge with the model of another); a variable's bad value is a
    ValueError naming it. ``flags``: ``given`` are command-line flags (named so in messages), else keywords."""
    given, fallback = given or {}, fallback or {}
    environ = os.environ if environ is None else environ
    values, sources = {}, {}
    for setting in SETTINGS:
        value, source = given.get(setting.name), setting.flag if flags else setting.keyword
        if value is None and setting.env and environ.get(setting.env):
            value, source = _parse_variable(setting, environ[setting.env]), f"${setting.env}"
        if value is None and mera and environ.get(MERA_ENV.get(setting.name, "")):
            value, source = environ[MERA_ENV[setting.name]], f"${MERA_ENV[setting.name]}"
        if value is None:
            value, source = fallback.get(setting.name), None
        values[setting.name] = setting.default if value is None else value
        sources[setting.name] = source if value is not None else None
    check_one_source(sources["url"], sources["model"])
    if sources["url"] == f"${MERA_ENV['url']}":  # as compute_llm_judge posts it; MERA's key with it
        values["url"] = f"{values['url'].rstrip('/')}/v1/chat/completions"
        if sources["api_key"] is None:
            values["api_key"] = next((environ[name] for name in MERA_KEYS if environ.get(name)), None)
    return values


def _parse_variable(setting, text):
    try:
        return setting.parse(text)
    except ValueError as err:
        raise ValueError(f"${setting.env}: {err}") from None


class MixedJudgeError(ValueError):
    """The judge's URL and model come from two places (two different judges, likely)."""


def check_one_source(url, model):
    """The URL's and the model's sources (a keyword, flag or ``$VARIABLE``; None when unset) must be one place."""
    if url and model and _level(url) != _level(model):
        raise MixedJudgeError(f"the judge URL comes from {url} and its model from {model}, two places (two "
                              f"judges?): set both in one place (precedence: {PRECEDENCE})")


def _level(source):
    return 1 if source.startswith("$QAHUB_") else 2 if source.startswith("$LM_EVAL_") else 0


def check_options(**values):
    """Values given to ``compute`` (by name, None skipped), each checked; a ValueError names the keyword."""
    for name, value in values.items():
        if value is not None:
            BY_NAME[name].check(value)


def keyword_docs(indent="    ", width=110):
    """The ``judge_<name>`` entries of the metric's keyword documentation."""
    entries = []
    for setting in SETTINGS:
        text = f"{setting.keyword}: {setting.help}{setting.range_text()} (default {setting.default_text()})."
        entries.append(textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent * 2))
    return "\n".join(entries)


def as_float(value):
    """Python, numpy and Decimal numbers as float; None for anything else, bools included (True is no grade)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, decimal.Decimal)):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError, TypeError):  # Decimal('sNaN') cannot be converted
        return None
