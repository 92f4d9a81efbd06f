"""Checks of inputs that several metrics make, and ``qahub evaluate`` with them.

Kept once here and linked into each metric directory that uses it as ``checks.py`` (as ``task_spec.py`` is), so
that a metric directory loads with ``evaluate.load(dir)`` without qahub installed; qahub itself imports it as
``qahub.metrics._shared.checks``.
"""


def is_text(value) -> bool:
    """Whether ``value`` is a string that UTF-8 (and so Arrow) can hold: one without a lone surrogate, which a
    Python string (and JSON's "\\ud800") may hold. Encoding is the fastest test: UTF-16 refuses exactly the
    lone surrogates, as UTF-8 does, at a third of its cost on Cyrillic text."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-16")
    except UnicodeEncodeError:
        return False
    return True


def record_id(record, key: str, where: str, expected: str = "a dict", error=ValueError) -> str:
    """``record[key]`` of a ``record`` that must be a dict whose ``key`` is a string; else ``error`` naming
    ``where``, what was expected and what was found."""
    if not isinstance(record, dict):
        raise error(f"{where}: expected {expected}, got {type(record).__name__}")
    value = record.get(key)
    if not isinstance(value, str):
        raise error(f"{where}: {key!r} must be a string, got {value!r}")
    return value
