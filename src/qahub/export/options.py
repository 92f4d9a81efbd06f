"""The builder options of a corpus (``--option KEY=VALUE``; ``builder_options`` in Python): the one parser, and the
checks made before any work (the names are the fields of the builder's config class, each of a kind)."""

from __future__ import annotations

import json

from qahub import registry

# BuilderConfig fields that are not builder options: what to use instead
RESERVED_OPTIONS = {
    "name": "--config CONFIG (configs=[...] in Python)",
    "config_name": "--config CONFIG (configs=[...] in Python)",
    "version": "nothing: the version is the builder's own",
    "description": "nothing: the description is the builder's own",
    "data_dir": "--data-dir DIR (data_dir=... in Python)",
    "data_files": "--data-dir DIR: the builder finds its files there",
    "mirror_url": "--mirror-url URL (mirror_url=... in Python)",
    "cache_dir": "--cache-dir DIR (cache_dir=... in Python)",
}


def option_kinds(corpus: str) -> dict[str, str]:
    """The builder options of ``corpus`` and their kind: ``bool``, ``str`` or ``names`` (a tuple of names)."""
    fields = getattr(registry.builder_class(corpus).BUILDER_CONFIG_CLASS, "__dataclass_fields__", {})
    kinds = {}
    for name, spec in fields.items():
        if name in RESERVED_OPTIONS:
            continue
        text = str(spec.type)
        kinds[name] = "bool" if spec.type in (bool, "bool") else "names" if "tuple" in text else "str"
    return kinds


def check_option_names(corpus: str | None, names) -> dict[str, str]:
    """``option_kinds(corpus)`` once every name is one of them (any corpus: no reserved name); else a ValueError
    naming the first that is not."""
    kinds = option_kinds(corpus) if corpus else {}
    for key in names:
        if key in RESERVED_OPTIONS:
            raise ValueError(f"option {key!r} is not a builder option; use {RESERVED_OPTIONS[key]}")
        if corpus and key not in kinds:
            raise ValueError(f"{corpus} has no builder option {key!r}; its options: {', '.join(sorted(kinds)) or 'none'}")
    return kinds


def check_options(corpus: str, options: dict):
    """Every key a builder option of ``corpus`` with a value of its kind; else a ValueError naming the key."""
    kinds = check_option_names(corpus, options)
    for key, value in options.items():
        kind = kinds[key]
        if kind == "bool" and not isinstance(value, bool):
            raise ValueError(f"option {key}: expected true or false, got {value!r}")
        if kind == "str" and value is not None and not isinstance(value, str):
            raise ValueError(f"option {key}: expected a string, got {value!r}")
        if kind == "names" and value is not None and not _is_names(value):
            raise ValueError(f"option {key}: expected one or more names (e.g. {key}=train,valid_freq), got {value!r}")


TRUE, FALSE = ("true", "yes", "1"), ("false", "no", "0")


def parse_options(pairs: list[str], corpus: str | None = None) -> dict:
    """``KEY=VALUE`` pairs as builder options of ``corpus``, each VALUE read by its option's kind: booleans
    strictly (true/false/yes/no/1/0), names as a comma-separated list or JSON list, strings as given."""
    given = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        if key in given:
            raise ValueError(f"--option {key} is given twice")
        given[key] = value
    kinds = check_option_names(corpus, given)
    options = {key: _option_value(key, value, kinds.get(key, "str")) for key, value in given.items()}
    if corpus:
        check_options(corpus, options)
    return options


def _option_value(key: str, value: str, kind: str):
    text = value.strip()
    if kind == "bool":
        if text.lower() not in TRUE + FALSE:
            raise ValueError(f"--option {key}={value}: expected true/false, yes/no or 1/0")
        return text.lower() in TRUE
    if not text:
        raise ValueError(f"--option {key}=: give a value")
    if kind == "names":
        if text.startswith("["):
            try:
                names = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError(f"--option {key}={value}: not a JSON list; write {key}=a,b") from None
        else:
            names = [name.strip() for name in text.split(",")]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"--option {key}={value}: expected names separated by commas, e.g. {key}=train,test")
        return tuple(names)
    return value


def _is_names(value) -> bool:
    items = [value] if isinstance(value, str) else value
    return isinstance(items, (list, tuple)) and bool(items) and all(isinstance(x, str) and x for x in items)


def requested_splits(builder_options: dict) -> list[str] | None:
    splits = builder_options.get("splits")
    return None if splits is None else [splits] if isinstance(splits, str) else list(splits)


def check_splits_option(corpus, configs, builder_options):
    """``splits=...`` names splits every config built has, checked before any work."""
    wanted = requested_splits(builder_options)
    for config in configs if wanted else []:
        declared = registry.splits(corpus, config)
        unknown = [s for s in wanted if declared and s not in declared]
        if unknown:
            raise ValueError(f"{corpus}/{config} has no split {', '.join(unknown)}; its splits: {', '.join(declared)}")

