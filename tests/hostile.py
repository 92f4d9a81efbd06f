"""Damage for the hostile builder tests (tests/test_*_hostile.py): seeded mutations of a sample file's bytes,
each ``mutation(data, rng) -> bytes`` (JSON ones made JSON Lines ones by ``jsonl``), a copy of a sample folder
(damaged or to damage), and what a failed build must not leave."""

import json
import random
import shutil
from pathlib import Path

from qahub import registry

# values that a JSON record should not hold where the builder expects something else
HOSTILE_VALUES = [None, "", -1, 2**31, 2**63, 1.5, True, [], {}, "\ud800", "x" * 10000, [None], {"": None}]


def truncated(data, rng):
    """Cut anywhere before the end."""
    return data[: rng.randrange(len(data))]


def flipped(data, rng):
    """One to four bytes changed (each XORed with a non-zero byte, so that each does change)."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] ^= rng.randint(1, 255)
    return bytes(out)


def deleted_line(data, rng):
    lines = data.split(b"\n")
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def reencoded(encoding):
    """The file's text in ``encoding`` (characters it cannot hold become ``?``)."""

    def damage(data, rng):
        return data.decode("utf-8").encode(encoding, errors="replace")

    damage.__name__ = f"reencoded_{encoding.replace('-', '_')}"
    return damage


def json_objects(value, top=True):
    """The JSON objects inside ``value``, not the top level (removing a whole record can leave a valid file)."""
    if isinstance(value, dict):
        if not top:
            yield value
        for item in value.values():
            yield from json_objects(item, top=False)
    elif isinstance(value, list):
        for item in value:
            yield from json_objects(item, top=False)


def _json_mutation(change):
    """A mutation of a JSON file: ``change(objects, rng)`` edits its non-empty inner objects in place."""

    def damage(data, rng):
        tree = json.loads(data)
        change([obj for obj in json_objects(tree) if obj], rng)
        return json.dumps(tree, indent=2).encode("utf-8")  # ASCII escapes: a lone surrogate can be written

    damage.__name__ = change.__name__
    return damage


@_json_mutation
def deleted_key(objects, rng):
    """One key gone from one object."""
    target = rng.choice(objects)
    del target[rng.choice(sorted(target))]


@_json_mutation
def deleted_column(objects, rng):
    """The same key gone from every object that has it (a column of the file)."""
    key = rng.choice(sorted({key for obj in objects for key in obj}))
    for obj in objects:
        obj.pop(key, None)


def replacing(values):
    """A JSON mutation: one value replaced by one of ``values``."""

    @_json_mutation
    def replaced_value(objects, rng):
        target = rng.choice(objects)
        target[rng.choice(sorted(target))] = rng.choice(values)

    return replaced_value


replaced_value = replacing(HOSTILE_VALUES)


def jsonl(mutation):
    """``mutation`` of a JSON file made one of a JSON Lines file: its records are taken as one JSON list."""

    def damage(data, rng):
        records = [json.loads(line) for line in data.splitlines() if line.strip()]
        changed = json.loads(mutation(json.dumps(records).encode("utf-8"), rng))
        return "".join(json.dumps(record) + "\n" for record in changed).encode("utf-8")

    damage.__name__ = mutation.__name__
    return damage


def sample_copy(corpus, tmp_path):
    """``tmp_path / "data"``: a copy of the corpus's bundled sample files, to be damaged."""
    return Path(shutil.copytree(registry.samples_dir(corpus), Path(tmp_path) / "data"))


def damaged_copy(sample, root, relpath, damage, seed):
    """``root``: a copy of the folder ``sample`` whose file ``relpath`` went through ``damage``, seeded."""
    shutil.copytree(sample, root)
    path = Path(root) / relpath
    path.write_bytes(damage(path.read_bytes(), random.Random(f"{relpath}/{damage.__name__}/{seed}")))
    return Path(root)


def half_written(cache):
    """Arrow files and ``*.incomplete`` folders under ``cache`` (lock files aside): what a failed build must not leave."""
    return sorted(str(p) for p in Path(cache).rglob("*")
                  if p.suffix == ".arrow" or (".incomplete" in p.name and p.suffix != ".lock"))


def send_reply(handler, status, data: bytes, headers=None):
    """A JSON reply from a fake server's ``BaseHTTPRequestHandler``: status, extra headers, then ``data``."""
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
