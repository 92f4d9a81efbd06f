"""What leaves the machine: ``clean`` is the one function every file ``qahub publish-results`` pushes goes through
(text, JSON, YAML, Markdown, HTML, inspect's zipped logs member by member, Parquet value by value), and
``leak`` the check made on what it returns before anything is sent.

- Credentials: Hub tokens (the configured one, any ``hf_...``), the user-info of a URL
  (``https://user:pw@host`` -> ``https://***@host``), and the value of any key whose name says it is a secret
  (``token=...`` in an lm-eval ``model_args`` string, ``"api_key": "..."`` in a JSON object) -> ``***``.
- Local paths: a path of a published file becomes its place in the repo (``runs/<run>/<name>``), a path inside
  the report folder becomes relative to it, and any other path under the home folder, the current folder or the
  folders the runs and the report are in is cut to its last component.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from pathlib import Path, PurePosixPath

from qahub.console import configured_token, scrub

REDACTED = "***"
# key names that hold a secret (use_auth_token, HF_TOKEN, db_password, openai_api_key, ...); "tokens" or
# "tokenizer" are not secrets
SECRET_KEY = (r"[\w.-]*?(?:token|password|passwd|secret|api[_-]?key|apikey|credentials?|access[_-]?key|"
              r"private[_-]?key)|auth|authorization|pwd")
KEY_VALUE = re.compile(rf"(?i)(?<![\w.+/-])((?:{SECRET_KEY}))(\s*=\s*)([^,\s\"'&;)}}\]\\]+)")
JSON_KEY = re.compile(rf'(?i)("(?:{SECRET_KEY})"\s*:\s*)"((?:[^"\\]|\\.)*)"')
YAML_KEY = re.compile(rf"(?im)^(\s*(?:{SECRET_KEY})\s*:\s*)(\S.*)$")
PATH_TAIL = r"(?:/[^\s\"'<>,;|()\[\]{}\\`*]*)?"  # the rest of a path after a known folder (stops at quotes, ...)
# an absolute path under a folder local paths start with, wherever it is (a corpus export in /data/..., a log in
# /tmp/...); not after a word, a dot or a slash, so URLs, dates, "and/or" and base64 images are left alone
ANY_PATH = re.compile(r"(?<![\w.~/+-])/(?:home|Users|root|tmp|var|mnt|data|work|opt|srv|scratch|private|media|net|"
                      r"gpfs|lustre|nfs|storage|shared|workspace|content|kaggle)(?:/[^\s\"'<>,;|()\[\]{}\\`*]+)+")


class Local:
    """The local paths a published file may hold and what each becomes: ``moved`` ``{absolute path: its place
    in the repo}`` (a file or folder that is pushed itself), ``roots`` folders whose paths are cut to their last
    component (home, the current folder, where the report and the runs are)."""

    def __init__(self, moved: dict, roots):
        self.moved = sorted(((str(k), v) for k, v in moved.items()), key=lambda item: -len(item[0]))
        found = {str(Path(r)) for r in roots if r and len(Path(r).parts) > 1}
        self.roots = sorted(found, key=len, reverse=True)
        self.patterns = [re.compile(rf"(?<![\w.~/+-]){re.escape(root)}(?![\w.-]){PATH_TAIL}") for root in self.roots]

    def text(self, text: str) -> str:
        for path, place in self.moved:
            text = re.sub(rf"(?<![\w.~/+-]){re.escape(path)}(?![\w.-])", place.replace("\\", r"\\"), text)
        for root, pattern in zip((*self.roots, "/"), (*self.patterns, ANY_PATH), strict=True):
            text = pattern.sub(lambda found, root=root: _last_part(found[0], root), text)
        return text


def _last_part(path: str, root: str) -> str:
    """A local path cut to its last component; the folder itself, or a top folder's child (``/home/alice``), is
    a placeholder: its name may be the user's."""
    path = path.rstrip("/")
    return "[local folder]" if path == root or path.count("/") <= 2 else PurePosixPath(path).name


def roots_of(paths) -> list:
    """The folders a path under which is cut: home, the current folder, and each given path's folder."""
    found = [os.path.expanduser("~"), os.getcwd()]
    for path in paths:
        found.append(str(Path(path).parent))
    return found


def clean_text(text: str, local: Local) -> str:
    text = scrub(text)  # tokens and URL user-info (the same scrub the command line's messages get)
    text = KEY_VALUE.sub(lambda m: m[1] + m[2] + REDACTED, text)
    text = JSON_KEY.sub(lambda m: f'{m[1]}"{REDACTED}"', text)
    text = YAML_KEY.sub(lambda m: m[1] + REDACTED, text)
    return local.text(text)


def clean(name: str, body: bytes, local: Local) -> bytes:
    """``body`` of the pushed file ``name`` without credentials or local paths (see the module's doc)."""
    suffix = PurePosixPath(name).suffix
    if suffix == ".parquet":
        return _parquet(body, local)
    if suffix == ".eval" and zipfile.is_zipfile(io.BytesIO(body)):
        return _zip(body, local)
    if suffix in (".png", ".jpg", ".gif"):
        return body
    return clean_text(body.decode("utf-8"), local).encode("utf-8")


def _zstd():
    """zipfile able to read and write zstd members, as inspect writes its ``.eval`` logs: inspect's own patch of
    the standard library (``zipfile_zstd``, installed with inspect-ai; Python 3.14 has it built in)."""
    if not hasattr(zipfile, "ZIP_ZSTANDARD"):
        try:
            import zipfile_zstd  # noqa: F401 - its import adds zstd to zipfile
        except ImportError:
            pass  # a deflated log still reads; a zstd one is refused by zipfile, in one line naming the file


def _zip(body: bytes, local: Local) -> bytes:
    """An inspect ``.eval`` log (a zip of JSON files): each member cleaned, in the same order and compression."""
    _zstd()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(body)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            try:
                data = clean_text(data.decode("utf-8"), local).encode("utf-8")
            except UnicodeDecodeError:
                pass  # a binary member (none in inspect's logs): as it is, the leak check reads it raw
            target.writestr(info, data, compress_type=info.compress_type)
    return out.getvalue()


def _parquet(body: bytes, local: Local) -> bytes:
    """A Parquet file with every string in it cleaned (rewritten only when one changed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(body))
    rows = table.to_pylist()
    cleaned = _values(rows, local)
    if cleaned == rows:
        return body
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(cleaned, schema=table.schema), out)
    return out.getvalue()


def _values(value, local: Local):
    if isinstance(value, str):
        return clean_text(value, local)
    if isinstance(value, dict):
        return {k: _values(v, local) for k, v in value.items()}
    if isinstance(value, list):
        return [_values(v, local) for v in value]
    return value


def readable(name: str, body: bytes) -> str:
    """All the text a pushed file holds, for ``leak``: a zip's members decompressed, a Parquet file's values."""
    suffix = PurePosixPath(name).suffix
    if suffix == ".eval" and zipfile.is_zipfile(io.BytesIO(body)):
        _zstd()
        with zipfile.ZipFile(io.BytesIO(body)) as source:
            return "\n".join(source.read(i).decode("utf-8", "replace") for i in source.infolist())
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return repr(pq.read_table(io.BytesIO(body)).to_pylist())
    return body.decode("utf-8", "replace")


def leak(name: str, body: bytes, local: Local) -> str | None:
    """What of a local path or a credential a cleaned file still holds (None: nothing)."""
    text = readable(name, body) + "\n" + body.decode("latin-1")
    token = configured_token()
    if isinstance(token, str) and len(token) >= 8 and token in text:
        return "the Hub token"
    for root in local.roots:
        if re.search(rf"(?<![\w.~/+-]){re.escape(root)}(?![\w.-])", text):
            return f"a local path ({root})"
    return None
