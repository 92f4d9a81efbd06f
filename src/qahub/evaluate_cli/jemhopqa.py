"""``qahub evaluate jemhopqa``: the official JEMHopQA scores of a prediction file.

Predictions: the official format ``{"answer": {qid: answer}, "derivations": {qid: [[s, r, [o...]], ...]}}``,
the official TSV form (columns ``qid, predicted_answer, predicted_derivations``; derivations written
``(subject, relation, object1、object2); (...)``), converted as the upstream ``tsv_to_pred_json.py`` does, model
replies by qid (``{qid: reply}``, records ``{qid, reply}``; read by the metric's reply parser) or records ``{qid,
answer, derivations}``, all read by ``predictions.py``; a bare list of replies only with ``--by-position``.

References are dataset rows: an export loaded with ``datasets.load_dataset`` (``--references``), the rows of a
local copy of the upstream files read by the builder's own row reader, without `datasets` (``--data-dir``, or an
upstream file given to ``--references``), or the corpus built by its builder (``--config`` alone, downloading).
This module reads only prediction files.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import warnings
from pathlib import Path

from qahub import registry
from qahub.evaluate_cli import predictions
from qahub.evaluate_cli.adapter import Adapter
from qahub.export.reader import built_rows, check_split, data_folder, export_rows
from qahub.files import write_output
from qahub.metrics.jemhopqa.records import JemhopqaInputError

HELP = "JEMHopQA answer and derivation scores, as the official evaluate.py"
COLUMNS = ("a_em", "a_score", "e_p", "e_r", "e_f", "r_p", "r_r", "r_f", "er_p", "er_r", "er_f")
# the reply fields: a model's raw reply; the official JSON's parts; the official TSV's columns
FIELDS = predictions.Fields(id=("qid",), reply=("reply", "answer", "derivations", "predicted_answer",
                                                 "predicted_derivations"),
                            gold=("answer", "derivations"), corpus="jemhopqa")
USER_DIC_SHA256 = "f237b567199b50aed4c756677ab4f478d7f1c77e8933c56b1052c7a93e601379"
_TRIPLE = re.compile(r"[（\(]\s*(.+?)\s*[,，]\s*(.+?)\s*[,，]\s*(.+?)\s*[）\)]")


class Jemhopqa(Adapter):
    metric, help, fields = "jemhopqa", HELP, (FIELDS,)
    predictions_help = ("official prediction JSON ({answer: {qid: ...}, derivations: {qid: ...}}), its TSV form, "
                        "model replies by qid ({qid: reply}, or records {qid, reply}), or records "
                        "{qid, answer, derivations}; a bare list of replies needs --by-position")
    references = {"metavar": "FOLDER_OR_HUB_ID",
                  "help": "an export of the corpus (folder or Hub id), loaded with datasets.load_dataset "
                          "(an upstream file such as DIR/corpus_ver1.2/dev_ver1.2.json is built from DIR)"}
    data_dir = {"help": "build the references from a local copy of the upstream files"}
    config = {"help": "corpus config, e.g. v1.2 (default: the export's or builder's default; alone, without "
                      "--references or --data-dir: build it by downloading)"}
    split = {"help": "split of the references (default: validation)"}
    references_required, predictions_first, input_errors = False, True, (JemhopqaInputError,)

    def add_options(self, parser):
        parser.add_argument("--ignore-missing", action="store_true", help="score only the predicted questions")
        parser.add_argument("--per-question", metavar="OUT_TSV",
                            help="write the per-question scores (official -o columns)")
        parser.add_argument("--dictionary", choices=("full", "core", "small"),
                            help="Sudachi dictionary (default: best installed)")
        parser.add_argument("--synonyms", default="auto",
                            help="auto (chikkarpy + user.dic, downloaded unless --user-dic is given, when chikkarpy "
                                 "is installed; else none), chikkarpy, none, a synonym source CSV file, "
                                 "or a JSON file {word: [synonyms]} (default: auto)")
        parser.add_argument("--user-dic", help="JEMHopQA's compiled user.dic, for chikkarpy; 'download' fetches the "
                                               "one of the pinned upstream commit (or from --mirror-url) and checks "
                                               "its sha256")
        parser.add_argument("--mirror-url", help="base URL serving jemhopqa/ files: user.dic (--user-dic download) "
                                                 "and the corpus when it is built by downloading (default: "
                                                 "$QAHUB_MIRROR_URL, else upstream)")
        parser.add_argument("--solver", choices=("assignment", "ilp"), default="assignment",
                            help="alignment solver (default: exact assignment; ilp = pulp/CBC as the official "
                                 "script)")

    def read(self, args):
        return predictions.read(args.predictions, FIELDS, unwrap=_from_official,
                                reply_field=getattr(args, "reply_field", None))

    def load_references(self, args):
        return load_references(args.references, args.data_dir, args.config, args.split,
                               getattr(args, "mirror_url", None))

    def match(self, read, references, args, where):
        return _metric_predictions(read, references, args, where)

    def options(self, args):
        synonyms = _synonyms(args.synonyms)
        user_dic, args.user_dic_note = _user_dic(args)
        return {"ignore_missing": args.ignore_missing, "per_question": bool(args.per_question),
                "dictionary": args.dictionary, "synonyms": synonyms, "user_dic": user_dic, "solver": args.solver}

    def result(self, result, args, where, matched, references):
        if args.user_dic_note:
            result["synonyms"] += f" ({args.user_dic_note})"
        if args.per_question:  # written by write_outputs, once the scores are printed
            args.per_question_rows = result.pop("per_question")
        return result

    def scorer_settings(self, args, result):
        """The official scorer's Sudachi mode C with the dictionary and synonyms it used, and the solver."""
        return {"scorer": "jemhopqa-official", "tokenizer": "sudachi", "mode": "C", "dictionary": result["dictionary"],
                "synonyms": result["synonyms"], "solver": args.solver}


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


def read_predictions(path) -> list:
    """The prediction records of ``path`` in file order, as the metric takes them (see ``_metric_record``)."""
    read = predictions.read(path, FIELDS, unwrap=_from_official)
    return list(read.replies) if read.replies is not None else _metric_records(read, read.records.items())


def _metric_predictions(read, references, args, ref_name="the references") -> list:
    """One prediction for each reference row, in their order, matched by qid: a reply (a string, paired with
    the row at its position by the metric) or a record ``{qid, answer?, derivations?}`` (none: not predicted)."""
    pairs = predictions.matched(read, [row["qid"] for row in references], missing="keep",
                                by_position=getattr(args, "by_position", False), references=ref_name)
    return _metric_records(read, pairs)


def _metric_records(read, pairs) -> list:
    """``_metric_record`` of each (qid, record); a question without a prediction is a record of neither part: the
    metric names it (or skips it, --ignore-missing)."""
    numeric = _numeric_answers(read)
    return [{"qid": qid} if record is None else _metric_record(read, qid, record, numeric) for qid, record in pairs]


def _metric_record(read, qid, record, numeric=False):
    """A reply (any value but an object; what is not a string is unparseable), or a record of the official
    parts: ``answer`` / ``derivations``, or the TSV's cells (read as upstream ``tsv_to_pred_json.py`` does)."""
    parts = [name for name in FIELDS.reply[1:] if name in record]
    if "reply" in record:
        if parts:
            raise ValueError(f"{read.path}: record {read.where[qid]}: a reply and {', '.join(parts)} in one record: "
                             "give the model's reply, or its answer and derivations")
        return None if isinstance(record["reply"], dict) else record["reply"]
    if "predicted_answer" in record or "predicted_derivations" in record:
        return _from_tsv_row(read, qid, record, numeric)
    return {"qid": qid, **{name: record[name] for name in ("answer", "derivations") if name in record}}


def _from_official(data):
    """The records of the official format ``{"answer": {qid: ...}, "derivations": {qid: ...}}``; any other value
    as it is (an object {qid: reply}, a list)."""
    if not (isinstance(data, dict) and {"answer", "derivations"} & set(data)):
        return data
    if not (set(data) == {"answer", "derivations"} and all(isinstance(part, dict) for part in data.values())):
        raise ValueError("not the official prediction format: expected an object with \"answer\" and "
                         f"\"derivations\" objects keyed by qid, got {sorted(data)}")
    records = {}
    for part in ("answer", "derivations"):
        for qid, value in data[part].items():
            records.setdefault(qid, {"qid": qid})[part] = value
    return list(records.values())


# pandas.read_table's default missing values, read as upstream tsv_to_pred_json.py reads the TSV
TSV_MISSING = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                         "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})


def _numeric_answers(read) -> bool:
    """Whether pandas, which upstream ``tsv_to_pred_json.py`` reads the TSV with, reads its answer column as
    numbers (every answer there is one): upstream then scores every answer 0, as not a string."""
    cells = [record["predicted_answer"] for record in read.records.values() if "predicted_answer" in record]
    given = [cell for cell in cells if cell not in TSV_MISSING]
    return bool(given) and all(map(_is_number, given))


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _from_tsv_row(read, qid, record, numeric) -> dict:
    """As upstream ``tsv_to_pred_json.py``: a missing answer (an empty or NA cell, or a column of numbers) scores
    0 and a missing derivations cell gives no steps."""
    answer, cell = (record.get(name) for name in ("predicted_answer", "predicted_derivations"))
    answer = None if answer is None or answer in TSV_MISSING or numeric else answer
    where = f"{read.path}: record {read.where[qid]}"
    derivations = [] if cell is None or cell in TSV_MISSING else _tsv_derivations(where, qid, cell)
    return {"qid": qid, "answer": answer, "derivations": derivations}


def _tsv_derivations(where, qid, cell: str) -> list:
    """As upstream tsv_to_pred_json.py: ';'-separated '(s, r, o1、o2)'; unreadable steps are dropped with a note."""
    steps = []
    for part in cell.split(";"):
        found = _TRIPLE.findall(part)
        if not found:
            warnings.warn(f"{where}: qid {qid!r}: derivation step {part.strip()!r} is not "
                          "(subject, relation, objects): dropped (as tsv_to_pred_json.py)", stacklevel=2)
            continue
        subject, relation, objects = found[0]
        steps.append([subject, relation, objects.split("、")])
    return steps


def load_references(location, data_dir, config, split, mirror_url=None):
    """(reference rows, their name): an export loaded with ``datasets.load_dataset`` (folder or Hub id), the
    upstream file of ``config``/``split`` in ``data_dir`` (or downloaded and built, with ``config`` alone); an
    upstream file given as ``location`` is read from its folder. A local upstream file is read by the builder's
    own row reader (``loaders/_jemhopqa_files.py``), without `datasets`."""
    if location and Path(location).is_file():
        return _local_rows(*_upstream_file(Path(location), config, split)), location
    split = split or "validation"
    if location:
        return export_rows(location, config, split, corpus="jemhopqa"), f"{location} ({split})"
    if not (data_dir or config):
        raise ValueError("give the references: --references FOLDER_OR_HUB_ID (an export), --data-dir DIR "
                         "(the upstream files) or --config CONFIG (built by downloading)")
    config = config or registry.catalog()["jemhopqa"]["default"]
    if data_dir:
        rows = _local_rows(config, split, data_dir)
    else:
        rows = built_rows("jemhopqa", config, split, data_dir, mirror_url=mirror_url)
    return rows, f"jemhopqa {config}/{split}" + (f" built from {data_dir}" if data_dir else "")


def _local_rows(config, split, data_dir) -> list[dict]:
    """The rows of ``config``'s ``split`` in a local copy of the upstream files, as the builder yields them."""
    from qahub.loaders._jemhopqa_files import FILES, local_file, read_rows

    if config not in FILES:
        raise ValueError(f"jemhopqa has no config {config!r} (configs: {', '.join(FILES)})")
    check_split("jemhopqa", config, split, f"jemhopqa: config {config} has no split {split!r} (splits: {{found}})")
    return list(read_rows(local_file(data_folder(data_dir), config, split)))


def _upstream_file(path: Path, config, split):
    """(config, split, data folder) of an upstream file such as ``DIR/corpus_ver1.2/dev_ver1.2.json``."""
    from qahub.loaders._jemhopqa_files import FILES

    resolved = path.resolve().as_posix()
    for file_config, by_split in FILES.items():
        for file_split, relpath in by_split.items():
            if resolved.endswith("/" + relpath):
                if (config or file_config, split or file_split) != (file_config, file_split):
                    raise ValueError(f"--references {path} is the {file_config} {file_split} file, but --config "
                                     f"{config} --split {split} were asked for")
                return file_config, file_split, resolved[: -len(relpath) - 1]
    layout = ", ".join(relpath for by_split in FILES.values() for relpath in by_split.values())
    raise ValueError(f"--references {path}: a file is read only where the upstream layout places it ({layout}, "
                     "in a data folder); give an export folder or Hub id, or --data-dir")


def _synonyms(value: str):
    if value.endswith(".json"):
        from qahub.readers import decode_utf8, parse_json

        try:
            return parse_json(value, None, decode_utf8(value, None, Path(value).read_bytes()))
        except ValueError as err:
            raise ValueError(f"synonym file {err}") from None
    return value


def write_per_question(path: Path, rows: list[dict], overwrite: bool = False):
    """The official -o TSV, values written with str() as it does (its int 0 as "0"); parts left out by
    --ignore-missing are empty cells (the official script crashes)."""
    lines = ["\t".join(("qid", *COLUMNS))]
    for row in rows:
        lines.append("\t".join([row["qid"]] + ["" if row[c] is None else str(row[c]) for c in COLUMNS]))
    write_output(path, "\n".join(lines) + "\n", overwrite, option="--per-question")


ADAPTER = Jemhopqa()
add_arguments, run = ADAPTER.add_arguments, ADAPTER.run
