"""Issue 19: predictions are matched by an id stored in both, read by one reader for the five metrics.

Every case runs ``qahub`` as a user would (``qahub.cli.main`` in one batch process, tests/qahub_batch.py; the
installed entry point itself for /dev/zero), over the bundled sample exports: an export re-ordered
by another tool scores the same; a bare list of replies is paired by position only with ``--by-position`` and
one reply per row; the one reader answers the same for every metric (a BOM, U+2028 / U+0085 inside a JSON Lines
reply, a repeated, null or non-text id, ``/dev/zero``, a file over the size cap, a lone surrogate).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from qahub_batch import Batch

from qahub import registry

QAHUB = str(Path(sys.executable).with_name("qahub"))
FOUR_GIB = 4 << 30
ERROR_LINE = r"qahub evaluate: error: [^\n]+\n"


def _cases():
    """Each corpus's ``PREDICTION_CASE``, declared beside its metric's tests (``tests/test_<metric>_metric.py``):
    the metric command and its options, the config and split read, the reply field, and (id fields, gold reply)
    of each prediction a row of that split gives; ``gold``, the field in which those rows hold the gold answer,
    and ``docs`` (optional; default: the row itself), the records a row gives the model, which a file of replies
    made the common way holds with a reply column added (the harness task's docs where they are not the rows)."""
    cases = {}
    for metric in registry.metric_names():
        if importlib.util.find_spec(f"test_{metric}_metric") is not None:
            case = getattr(importlib.import_module(f"test_{metric}_metric"), "PREDICTION_CASE", None)
            if case is not None:
                cases[case["corpus"]] = case
    return cases


CASES = _cases()
CORPORA = sorted(CASES)


BATCH = Batch()


@pytest.fixture(autouse=True, scope="module")
def _stop_batch():
    yield
    BATCH.stop()


def qahub(*argv, limit=None):
    """``(exit status, stdout, stderr)`` of ``qahub`` (``limit``: its address space, in bytes). With a limit, the
    installed ``qahub`` in a process of its own (test_dev_zero_... runs it so for every corpus: the entry point
    end to end); without, in this file's one ``Batch`` process."""
    argv = ["--quiet", *map(str, argv)]
    if limit is None:
        return BATCH.run(argv)

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run([QAHUB, *argv], capture_output=True, text=True, timeout=600, preexec_fn=limited,
                          errors="backslashreplace")
    return done.returncode, done.stdout, done.stderr


def evaluate(corpus, export, predictions, *options, limit=None):
    case = CASES[corpus]
    return qahub("evaluate", *case["metric"], "--predictions", predictions, "--references", export,
                 "--config", case["config"], "--split", case["split"], *options, limit=limit)


def scores(corpus, export, predictions, *options):
    """The printed result, without the fields that name the files (the signature names the references too)."""
    code, out, err = evaluate(corpus, export, predictions, *options)
    assert code == 0, err
    named = ("predictions", "references", "qahub_signature")
    return {key: value for key, value in json.loads(out).items() if key not in named}


def shards(export, corpus):
    case = CASES[corpus]
    found = sorted((Path(export) / case["config"]).glob(f"{case['split']}-*.parquet"))
    assert found, f"no {case['config']}/{case['split']} shard in {export}"
    return found


def rows(export, corpus):
    return [row for shard in shards(export, corpus) for row in pq.read_table(shard).to_pylist()]


def items(export, corpus):
    """``[(id fields, gold reply)]`` of every row of the scored split, in row order."""
    return [item for row in rows(export, corpus) for item in CASES[corpus]["items"](row)]


def records(export, corpus, reply=lambda text: text):
    field = CASES[corpus]["reply"]
    return [{**ids, field: reply(text)} for ids, text in items(export, corpus)]


def write(path, value):
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def docs(export, corpus):
    """The records the model is run on, of every row of the scored split, as a file of them holds them."""
    made = CASES[corpus].get("docs", lambda row: [row])
    return [doc for row in rows(export, corpus) for doc in made(row)]


def reversed_copy(export, corpus, tmp_path):
    """A copy of the export whose scored split's shards hold their rows in reverse order (same README), as a
    re-save sorted by another tool would."""
    copy = tmp_path / f"reordered-{corpus}"
    shutil.copytree(export, copy)
    for shard in shards(copy, corpus):
        table = pq.read_table(shard)
        pq.write_table(table.take(list(reversed(range(table.num_rows)))), shard)
    assert rows(copy, corpus) == list(reversed(rows(export, corpus)))
    return copy


def assert_one_line(result, pattern):
    """``result``, a command's ``(exit status, stdout, stderr)``, is a failure with one error line matching ``pattern``."""
    code, out, err = result
    assert (code, out) == (1, ""), err
    assert re.fullmatch(ERROR_LINE, err), err
    assert re.search(pattern, err), err


@pytest.mark.parametrize("corpus", CORPORA)
def test_a_reordered_export_scores_the_same(sample_exports, tmp_path, corpus):
    """A re-ordered export (Jeopardy `qa`: gold accuracy 1.0 became 0.0006) gives the same scores: every
    metric matches predictions to rows by an id stored in both."""
    export = sample_exports[corpus]
    predictions = write(tmp_path / "predictions.json", records(export, corpus))
    before = scores(corpus, export, predictions)
    assert scores(corpus, reversed_copy(export, corpus, tmp_path), predictions) == before


def test_jeopardy_qa_export_stores_the_upstream_row_as_question_id(sample_exports):
    export = sample_exports["jeopardy"]
    for split, count in (("train", 5), ("validation", 4)):
        table = pq.read_table(next((export / "qa").glob(f"{split}-*.parquet")))
        assert table.column_names[0] == "question_id" and str(table.schema.field("question_id").type) == "int64"
        assert table.column("question_id").to_pylist() == list(range(count))
    card = (export / "README.md").read_text(encoding="utf-8")
    qa_features = card[card.index("config_name: qa"):]
    assert "name: question_id" in qa_features[: qa_features.index("splits:")]


def test_jeopardy_qa_gold_answers_score_1_on_a_reordered_export(sample_exports, tmp_path):
    export = sample_exports["jeopardy"]
    predictions = write(tmp_path / "gold.json", {str(row["question_id"]): row["answer"] for row in rows(export, "jeopardy")})
    assert scores("jeopardy", reversed_copy(export, "jeopardy", tmp_path), predictions)["accuracy"] == 1.0


@pytest.mark.parametrize("corpus", CORPORA)
def test_a_bare_reply_list_is_refused_without_by_position_and_scored_as_records_with_it(sample_exports, tmp_path,
                                                                                        corpus):
    export = sample_exports[corpus]
    replies = write(tmp_path / "replies.json", [text for _, text in items(export, corpus)])
    id_field = " + ".join(_id_fields(export, corpus))
    assert_one_line(evaluate(corpus, export, replies),
                    rf"replies\.json: a list of \d+ replies without ids: .*'{re.escape(id_field)}'"
                    r".*--by-position")
    with_ids = write(tmp_path / "records.json", records(export, corpus))
    assert scores(corpus, export, replies, "--by-position") == scores(corpus, export, with_ids)


def test_jemhopqa_reply_list_against_a_reversed_export_is_refused(sample_exports, tmp_path):
    """The issue's case: em 1.0 on the export, 0.083 on it reversed; now refused without --by-position."""
    export = sample_exports["jemhopqa"]
    replies = write(tmp_path / "replies.json", [text for _, text in items(export, "jemhopqa")])
    assert scores("jemhopqa", export, replies, "--by-position")["a"]["em"] == 1.0
    assert_one_line(evaluate("jemhopqa", reversed_copy(export, "jemhopqa", tmp_path), replies),
                    r"without ids: give each reply its row's id.*\"qid\"")


@pytest.mark.parametrize("options", [["--ignore-missing"], ["--ignore-missing", "--by-position"]])
def test_a_reply_list_one_short_is_refused_even_with_ignore_missing(sample_exports, tmp_path, options):
    """A list one reply short shifted every reply by one under --ignore-missing (em 0.050)."""
    export = sample_exports["jemhopqa"]
    replies = write(tmp_path / "replies.json", [text for _, text in items(export, "jemhopqa")][1:])
    assert_one_line(evaluate("jemhopqa", export, replies, *options),
                    r"replies\.json: (a list of \d+ replies without ids|--by-position: \d+ replies "
                    r"for the \d+ rows)")


def test_ignore_missing_scores_the_replies_given_by_id_unshifted(sample_exports, tmp_path):
    export = sample_exports["jemhopqa"]
    predictions = write(tmp_path / "some.json", records(export, "jemhopqa")[1:])
    result = scores("jemhopqa", export, predictions, "--ignore-missing")
    assert result["a"]["em"] == 1.0


@pytest.mark.parametrize("corpus", CORPORA)
def test_a_byte_order_mark_is_read_alike_by_every_metric(sample_exports, tmp_path, corpus):
    export = sample_exports[corpus]
    plain = write(tmp_path / "plain.json", records(export, corpus))
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert scores(corpus, export, bom) == scores(corpus, export, plain)


@pytest.mark.parametrize("corpus", CORPORA)
def test_line_separators_inside_a_json_lines_reply_are_text(sample_exports, tmp_path, corpus):
    """U+2028 and U+0085 are valid inside a JSON string: JSON Lines are split at \\n only (LIMUR refused them)."""
    export = sample_exports[corpus]
    replies = records(export, corpus, reply=lambda text: f"{text}\u2028\u0085")
    lines = tmp_path / "predictions.jsonl"
    lines.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in replies), encoding="utf-8")
    assert "\u2028" in lines.read_text(encoding="utf-8")
    assert scores(corpus, export, lines) == scores(corpus, export, write(tmp_path / "same.json", replies))


def _id_fields(export, corpus):
    return list(CASES[corpus]["items"](rows(export, corpus)[0])[0][0])


@pytest.mark.parametrize("corpus", CORPORA)
def test_an_id_given_twice_is_one_line_naming_the_record(sample_exports, tmp_path, corpus):
    export = sample_exports[corpus]
    given = records(export, corpus)
    predictions = write(tmp_path / "twice.json", [*given, given[0]])
    assert_one_line(evaluate(corpus, export, predictions),
                    rf"twice\.json: record {len(given)}: the id .* is given twice \(first in record 0\)")


@pytest.mark.parametrize("problem, value, message", [
    ("null", None, r"the id '\w+' is null"),
    ("surrogate", "\ud800", r"the id '\w+' \('\\ud800'\) holds a lone surrogate, which is not text"),
], ids=["null", "surrogate"])
@pytest.mark.parametrize("corpus", CORPORA)
def test_a_bad_id_is_one_line_naming_the_record(sample_exports, tmp_path, corpus, problem, value, message):
    export = sample_exports[corpus]
    given = records(export, corpus)
    given[1] = {**given[1], _id_fields(export, corpus)[0]: value}
    predictions = tmp_path / "bad.json"
    predictions.write_text(json.dumps(given), encoding="utf-8")  # ASCII: a lone surrogate as a \u escape
    assert_one_line(evaluate(corpus, export, predictions), rf"bad\.json: record 1: {message}")


@pytest.mark.parametrize("corpus", CORPORA)
def test_a_reply_with_a_lone_surrogate_is_scored_not_refused(sample_exports, tmp_path, corpus):
    """A model's reply is never bad input: what cannot be read scores 0."""
    export = sample_exports[corpus]
    given = records(export, corpus)
    field = CASES[corpus]["reply"]
    given[0] = {**given[0], field: "\ud800"}
    predictions = tmp_path / "surrogate.json"
    predictions.write_text(json.dumps(given), encoding="utf-8")
    code, out, err = evaluate(corpus, export, predictions)
    assert code == 0 and out.startswith("{"), err


@pytest.mark.parametrize("corpus", CORPORA)
def test_dev_zero_as_predictions_under_a_4_gib_limit_is_one_line(sample_exports, corpus):
    assert_one_line(evaluate(corpus, sample_exports[corpus], "/dev/zero", limit=FOUR_GIB),
                    r"/dev/zero: larger than [\d,]+ bytes: not a predictions file "
                    r"\(\$QAHUB_MAX_PREDICTIONS_BYTES sets the limit\)")


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(sample_exports, tmp_path):
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(300 << 20)  # sparse: 300 MiB of NULs that take no disk
    assert_one_line(evaluate("limur", sample_exports["limur"], huge, limit=FOUR_GIB), r"huge\.json: larger than [\d,]+ bytes")


def test_a_lone_surrogate_in_a_references_jsonl_names_the_file_and_record(tmp_path):
    references = tmp_path / "refs.jsonl"
    references.write_text('{"question_id": 0, "answer": "Рим"}\n{"question_id": 1, "answer": "\\ud800"}\n',
                          encoding="utf-8")
    predictions = write(tmp_path / "p.json", {"0": "Рим", "1": "Лима"})
    assert_one_line(qahub("evaluate", "jeopardy_meteor", "--predictions", predictions, "--references", references),
                    r"refs\.jsonl: record line 2: question 1: the gold answer holds a lone surrogate")


@pytest.mark.parametrize("metric, id_field", [("jemhopqa", "'qid'"), ("limur", "'id' or 'meta.id'"),
                                              ("topical_chat", "'conversation_id + turn_index'")])
def test_help_documents_by_position_and_the_id_field(metric, id_field):
    code, out, _ = qahub("evaluate", metric, "--help")
    assert code == 0 and "--by-position" in out, out
    assert f"by id: each record names its row by {id_field}" in " ".join(out.split())


# --- issue 27.1: a predictions record never supplies the gold

DONT_KNOW = "не знаю / わからない / don't know"


@pytest.mark.parametrize("output", ["prediction", "model_answer"])
@pytest.mark.parametrize("corpus", CORPORA)
def test_rows_plus_a_reply_column_are_refused_naming_both_fields(sample_exports, tmp_path, corpus, output):
    """The dataset's rows plus the model's output column (``ds.map(...)``, ``to_json``): the gold field was read as
    the reply (LIMUR rows + "prediction" exact_match 1.0, JEMHopQA 1.0, Jeopardy rows + "model_answer" accuracy
    1.0, though the model answered "don't know" everywhere)."""
    export = sample_exports[corpus]
    made = write(tmp_path / "rows.json", [{**doc, output: DONT_KNOW} for doc in docs(export, corpus)])
    assert_one_line(evaluate(corpus, export, made),
                    rf"rows\.json: record 0: holds the gold field '{CASES[corpus]['gold']}' and the "
                    rf"field '{output}': which is the model's reply\? Name it with --reply-field {output} ")


@pytest.mark.parametrize("corpus", CORPORA)
def test_reply_field_scores_the_reply_column_of_the_rows(sample_exports, tmp_path, corpus):
    export = sample_exports[corpus]
    made = [{**doc, "model_answer": DONT_KNOW} for doc in docs(export, corpus)]
    lines = tmp_path / "rows.jsonl"  # as Dataset.to_json writes it: a record a line
    lines.write_text("".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in made), encoding="utf-8")
    replies_only = write(tmp_path / "replies.json", records(export, corpus, reply=lambda _: DONT_KNOW))
    gold = write(tmp_path / "gold.json", records(export, corpus))
    scored = scores(corpus, export, lines, "--reply-field", "model_answer")
    assert scored == scores(corpus, export, replies_only) != scores(corpus, export, gold)


@pytest.mark.parametrize("corpus", CORPORA)
def test_the_rows_themselves_are_refused_as_rows_without_a_reply(sample_exports, tmp_path, corpus):
    export = sample_exports[corpus]
    result = evaluate(corpus, export, write(tmp_path / "rows.json", docs(export, corpus)))
    gold = CASES[corpus]["gold"]
    if gold != CASES[corpus]["reply"]:  # the gold field is not a reply field: the record has no reply at all
        assert_one_line(result, r"rows\.json: record 0: (no reply|holds the gold field)")
        return
    assert_one_line(result, rf"rows\.json: record 0: holds the gold field '{gold}' and the dataset's fields "
                            r"'\w+'.*: a row of the dataset, no model reply in it; add the reply as a field "
                            r"and name it with --reply-field NAME")


def test_a_predictions_only_record_with_the_documented_gold_named_field_is_read(sample_exports, tmp_path):
    """LIMUR's ``outputs`` is also the reply field of predictions-only files (a MERA submission): read as before,
    with the record's id and nothing else; ``--reply-field outputs`` says the same."""
    export = sample_exports["limur"]
    plain = write(tmp_path / "outputs.json", records(export, "limur"))
    assert scores("limur", export, plain)["exact_match"] == 1.0
    assert scores("limur", export, plain, "--reply-field", "outputs")["exact_match"] == 1.0


@pytest.mark.parametrize("value, problem", [
    ("id", r"--reply-field id: that is the id field, not a reply"),
    ("reply", r"record 0: no field 'reply' \(--reply-field\)"),
])
def test_a_reply_field_that_is_no_reply_is_one_line(sample_exports, tmp_path, value, problem):
    export = sample_exports["limur"]
    assert_one_line(evaluate("limur", export, write(tmp_path / "p.json", records(export, "limur")),
                             "--reply-field", value),
                    rf"p\.json: {problem}")


def test_help_documents_reply_field_and_the_gold_fields():
    for metric, gold in [("limur", "outputs"), ("jeopardy_meteor", "answer, Answer"), ("topical_chat", "response, target"),
                         ("jemhopqa", "answer, derivations"), ("doc2dial", "answers, utterance")]:
        code, out, _ = qahub("evaluate", metric, "--help")
        assert code == 0 and f"also holds a gold field ({gold})" in " ".join(out.split()), out


# --- issue 27.3: a CSV header naming a column twice

@pytest.mark.parametrize("corpus", CORPORA)
def test_a_csv_header_naming_a_column_twice_is_refused_naming_it(sample_exports, tmp_path, corpus):
    export = sample_exports[corpus]
    reply, given = CASES[corpus]["reply"], records(export, corpus)
    names = [*_id_fields(export, corpus), reply, reply]
    lines = [",".join(names)] + [",".join(str(record[name]) for name in names[:-1]) + ",x" for record in given]
    path = tmp_path / "twice.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_one_line(evaluate(corpus, export, path),
                    rf"twice\.csv: record line 1: the header names the column '{reply}' twice")
