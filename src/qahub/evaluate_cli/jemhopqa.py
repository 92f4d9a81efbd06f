"""``qahub evaluate jemhopqa``: the official JEMHopQA scores of a prediction file.

Predictions: the official format ``{"answer": {qid: answer}, "derivations": {qid: [[s, r, [o...]], ...]}}``,
the official TSV form (columns ``qid, predicted_answer, predicted_derivations``; derivations written
``(subject, relation, object1、object2); (...)``), read with pandas and converted as the upstream
``tsv_to_pred_json.py`` does, or a JSON list of model replies (strings, paired with the references by
position, read by the metric's reply parser) and/or records ``{qid, answer, derivations}``.

References are dataset rows: an export loaded with ``datasets.load_dataset`` (``--references``), or the corpus
built by its builder (``--data-dir``, or ``--config`` alone to download); an upstream file path given to
``--references`` is built from its folder. This module reads only prediction files.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import sys
import warnings
from pathlib import Path

from qahub import registry
from qahub.evaluate_cli.references import built_rows, export_rows
from qahub.files import DuplicateKeyError, loads_strict, write_output

HELP = "JEMHopQA answer and derivation scores, as the official evaluate.py"
COLUMNS = ("a_em", "a_score", "e_p", "e_r", "e_f", "r_p", "r_r", "r_f", "er_p", "er_r", "er_f")
TSV_HEADER = ("qid", "predicted_answer", "predicted_derivations")
USER_DIC_SHA256 = "f237b567199b50aed4c756677ab4f478d7f1c77e8933c56b1052c7a93e601379"
_TRIPLE = re.compile(r"[（\(]\s*(.+?)\s*[,，]\s*(.+?)\s*[,，]\s*(.+?)\s*[）\)]")


def add_arguments(parser):
    parser.add_argument("--predictions", required=True,
                        help="official prediction JSON ({answer: {qid: ...}, derivations: {qid: ...}}), its TSV "
                             "form, or a JSON list of model replies (paired with the references by position)")
    refs = parser.add_mutually_exclusive_group()
    refs.add_argument("--references", metavar="FOLDER_OR_HUB_ID",
                      help="an export of the corpus (folder or Hub id), loaded with datasets.load_dataset "
                           "(an upstream file such as DIR/corpus_ver1.2/dev_ver1.2.json is built from DIR)")
    refs.add_argument("--data-dir", help="build the references from a local copy of the upstream files")
    parser.add_argument("--config", help="corpus config, e.g. v1.2 (default: the export's or builder's default; "
                                         "alone, without --references or --data-dir: build it by downloading)")
    parser.add_argument("--split", help="split of the references (default: validation)")
    parser.add_argument("--ignore-missing", action="store_true", help="score only the predicted questions")
    parser.add_argument("--per-question", metavar="OUT_TSV", help="write the per-question scores (official -o columns)")
    parser.add_argument("--dictionary", choices=("full", "core", "small"), help="Sudachi dictionary (default: best installed)")
    parser.add_argument("--synonyms", default="auto",
                        help="auto (chikkarpy + user.dic, downloaded unless --user-dic is given, when chikkarpy "
                             "is installed; else none), chikkarpy, none, a synonym source CSV file, "
                             "or a JSON file {word: [synonyms]} (default: auto)")
    parser.add_argument("--user-dic", help="JEMHopQA's compiled user.dic, for chikkarpy; 'download' fetches the one "
                                           "of the pinned upstream commit (or from --mirror-url) and checks its sha256")
    parser.add_argument("--mirror-url", help="base URL serving jemhopqa/ files: user.dic (--user-dic download) and "
                                             "the corpus when it is built by downloading (default: "
                                             "$QAHUB_MIRROR_URL, else upstream)")
    parser.add_argument("--solver", choices=("assignment", "ilp"), default="assignment",
                        help="alignment solver (default: exact assignment; ilp = pulp/CBC as the official script)")


def run(args) -> dict:
    predictions = read_predictions(Path(args.predictions))
    references, ref_name = load_references(args.references, args.data_dir, args.config, args.split,
                                           getattr(args, "mirror_url", None))
    synonyms = _synonyms(args.synonyms)
    user_dic, note = _user_dic(args)
    metric = registry.load_metric("jemhopqa")
    input_error = sys.modules[type(metric).__module__].JemhopqaInputError
    try:
        result = metric.compute(
            predictions=predictions, references=references, ignore_missing=args.ignore_missing,
            per_question=bool(args.per_question), dictionary=args.dictionary, synonyms=synonyms,
            user_dic=user_dic, solver=args.solver,
        )
    except input_error as err:  # a problem of the data: name the predictions and the references
        raise ValueError(f"scoring {args.predictions} against {ref_name}: {err}") from None
    if note:
        result["synonyms"] += f" ({note})"
    if args.per_question:  # written by write_outputs, once the scores are printed
        args.per_question_rows = result.pop("per_question")
    return result


def write_outputs(args):
    """The --per-question file, after ``qahub evaluate`` has printed the scores (a failed write loses none)."""
    if args.per_question:
        write_per_question(Path(args.per_question), args.per_question_rows, args.overwrite)


def _user_dic(args):
    """(user.dic path or None, a note when it could not be had). With --synonyms auto and chikkarpy installed,
    user.dic is downloaded (cached, sha256-checked) as for --user-dic download: the official configuration."""
    has_chikkarpy = importlib.util.find_spec("chikkarpy") is not None
    if args.user_dic == "download" and not has_chikkarpy:
        raise ValueError("--user-dic download: user.dic is read by chikkarpy, which is not installed "
                         "(pip install chikkarpy)")
    if args.user_dic == "download":
        return fetch_user_dic(getattr(args, "mirror_url", None)), None
    if args.user_dic is not None or args.synonyms != "auto" or not has_chikkarpy:
        return args.user_dic, None
    try:
        return fetch_user_dic(getattr(args, "mirror_url", None)), None
    except (ConnectionError, ValueError, OSError) as err:
        note = f"user.dic could not be downloaded: {err}"
        warnings.warn(f"JEMHopQA synonyms: {note}; scoring with chikkarpy's system dictionary only "
                      "(pass --user-dic PATH)", UserWarning, stacklevel=2)
        return None, note


def fetch_user_dic(mirror_url=None, cache_dir=None) -> str:
    """JEMHopQA's compiled user.dic (of the commit the builder pins), downloaded into the datasets cache."""
    from types import SimpleNamespace

    import datasets

    from qahub.loaders.jemhopqa import SOURCE

    config = SimpleNamespace(data_dir=None, mirror_url=mirror_url)
    manager = datasets.DownloadManager("jemhopqa", download_config=datasets.DownloadConfig(cache_dir=cache_dir))
    source = dataclasses.replace(SOURCE, sha256={"user.dic": USER_DIC_SHA256})
    return source.resolve(config, manager, {"user_dic": "user.dic"})["user_dic"]


def read_predictions(path: Path) -> list:
    """Prediction records ``{qid, answer?, derivations?}`` from the official JSON format or its TSV form, or
    the items of a JSON list (replies and/or records) as they are."""
    text = read_text(path, "prediction file")
    start = text.lstrip("\ufeff \t\r\n")[:1]
    if start == "{":
        return _from_official(path, load_json(path, text.lstrip("\ufeff"), "prediction file"))
    if start == "[":
        return load_json(path, text.lstrip("\ufeff"), "prediction file")
    return _from_tsv(path)


def read_text(path: Path, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{what} {path}: not UTF-8 text ({err.reason} at byte {err.start})") from None


def load_json(path: Path, text: str, what: str):
    """The JSON value of ``text``; every failure a one-line ValueError naming the file (and a repeated key)."""
    try:
        return loads_strict(text, f"{what} {path}")
    except DuplicateKeyError:
        raise
    except json.JSONDecodeError as err:
        problem = f"{err.msg} at line {err.lineno} column {err.colno}"
    except RecursionError:
        problem = "nested too deeply"
    except ValueError as err:  # an integer of over 4,300 digits
        problem = str(err)[:200]
    raise ValueError(f"{what} {path}: not valid JSON ({problem})")


def _from_official(path: Path, data) -> list[dict]:
    if not (isinstance(data, dict) and isinstance(data.get("answer"), dict) and isinstance(data.get("derivations"), dict)):
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: not the official prediction format: expected an object with \"answer\" and "
                         f"\"derivations\" objects keyed by qid, got {keys}")
    records = {}
    for part in ("answer", "derivations"):
        for qid, value in data[part].items():
            records.setdefault(qid, {"qid": qid})[part] = value
    return list(records.values())


def _from_tsv(path: Path) -> list[dict]:
    """As upstream ``tsv_to_pred_json.py``: ``pandas.read_table`` with its defaults (BOM dropped, columns by name,
    quoting, NA values such as "NA" or "null" read as missing), then a non-string answer scores 0 and a
    non-string derivations cell gives no steps; a repeated qid keeps its last row (upstream's dict)."""
    frame = _read_table(path)
    records = {}
    for number, (_, row) in enumerate(frame.iterrows(), 1):
        qid = row["qid"]
        if not isinstance(qid, str):
            raise ValueError(f"{path}: row {number}: qid must be text, got {qid!r}")
        if qid in records:
            warnings.warn(f"{path}: row {number}: qid {qid!r} appears again: this row replaces the earlier one "
                          "(as tsv_to_pred_json.py)", stacklevel=2)
        answer, cell = row["predicted_answer"], row["predicted_derivations"]
        derivations = _tsv_derivations(path, number, qid, cell) if isinstance(cell, str) else []
        records[qid] = {"qid": qid, "answer": answer if isinstance(answer, str) else None, "derivations": derivations}
    return list(records.values())


def _read_table(path: Path):
    import pandas

    try:
        frame = pandas.read_table(path)
    except (pandas.errors.ParserError, pandas.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a readable prediction TSV ({err})") from None
    missing = [column for column in TSV_HEADER if column not in frame.columns]
    if missing:
        raise ValueError(f"{path}: not a JEMHopQA prediction file: expected the official JSON "
                         '{"answer": {qid: answer}, "derivations": {qid: derivations}}, a TSV with columns '
                         f"{', '.join(TSV_HEADER)}, or a JSON list of replies (missing {', '.join(missing)})")
    return frame


def _tsv_derivations(path, number, qid, cell: str) -> list:
    """As upstream tsv_to_pred_json.py: ';'-separated '(s, r, o1、o2)'; unreadable steps are dropped with a note."""
    steps = []
    for part in cell.split(";"):
        found = _TRIPLE.findall(part)
        if not found:
            warnings.warn(f"{path}: row {number}: qid {qid!r}: derivation step {part.strip()!r} is not "
                          "(subject, relation, objects): dropped (as tsv_to_pred_json.py)", stacklevel=2)
            continue
        subject, relation, objects = found[0]
        steps.append([subject, relation, objects.split("、")])
    return steps


def load_references(location, data_dir, config, split, mirror_url=None):
    """(reference rows, their name): an export loaded with ``datasets.load_dataset`` (folder or Hub id), or
    the corpus built from ``data_dir`` (or downloaded, with ``config`` alone); an upstream file given as
    ``location`` is built from its folder."""
    if location and Path(location).is_file():
        return built_rows("jemhopqa", *_upstream_file(Path(location), config, split)), location
    split = split or "validation"
    if location:
        return export_rows(location, config, split, corpus="jemhopqa"), f"{location} ({split})"
    if not (data_dir or config):
        raise ValueError("give the references: --references FOLDER_OR_HUB_ID (an export), --data-dir DIR "
                         "(the upstream files) or --config CONFIG (built by downloading)")
    config = config or registry.default_config("jemhopqa")
    rows = built_rows("jemhopqa", config, split, data_dir, mirror_url=mirror_url)
    return rows, f"jemhopqa {config}/{split}" + (f" built from {data_dir}" if data_dir else "")


def _upstream_file(path: Path, config, split):
    """(config, split, data folder) of an upstream file such as ``DIR/corpus_ver1.2/dev_ver1.2.json``."""
    from qahub.loaders.jemhopqa import SOURCE

    resolved = path.resolve().as_posix()
    for file_config, by_split in SOURCE.files.items():
        for file_split, relpath in by_split.items():
            if resolved.endswith("/" + relpath):
                if (config or file_config, split or file_split) != (file_config, file_split):
                    raise ValueError(f"--references {path} is the {file_config} {file_split} file, but --config "
                                     f"{config} --split {split} were asked for")
                return file_config, file_split, resolved[: -len(relpath) - 1]
    layout = ", ".join(relpath for by_split in SOURCE.files.values() for relpath in by_split.values())
    raise ValueError(f"--references {path}: a file is read only where the upstream layout places it ({layout}, "
                     "in a data folder); give an export folder or Hub id, or --data-dir")


def _synonyms(value: str):
    if value.endswith(".json"):
        return load_json(Path(value), read_text(Path(value), "synonym file"), "synonym file")
    return value


def write_per_question(path: Path, rows: list[dict], overwrite: bool = False):
    """The official -o TSV, values written with str() as it does (its int 0 as "0"); parts left out by
    --ignore-missing are empty cells (the official script crashes)."""
    lines = ["\t".join(("qid", *COLUMNS))]
    for row in rows:
        lines.append("\t".join([row["qid"]] + ["" if row[c] is None else str(row[c]) for c in COLUMNS]))
    write_output(path, "\n".join(lines) + "\n", overwrite, option="--per-question")
