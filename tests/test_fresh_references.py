"""Reference rows and lm-eval documents are read from an export's files as they are now (issue 19 items 1, 3, 5):
a rebuilt export or a same-named folder elsewhere is never answered from a datasets cache keyed by the folder's
name; a damaged or foreign export is one line naming the file; few-shot demonstrations never show the document
being asked. The commands run as a user runs them: the installed ``qahub`` with one persistent
``HF_DATASETS_CACHE``, and lm-eval's own ``simple_evaluate`` and sampler."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from datasets.info import DatasetInfosDict
from huggingface_hub import DatasetCard

from qahub import registry
from qahub.export import reader

QAHUB = [str(Path(sys.executable).with_name("qahub"))] if Path(sys.executable).with_name("qahub").exists() \
    else [sys.executable, "-m", "qahub.cli"]
DEV = "corpus_ver1.2/dev_ver1.2.json"
# a gold answer changed to one of the same length: the export's README (byte counts, sizes) may stay the same
OLD, NEW = "星の歌", "月の歌"


def qahub(*argv, cache):
    """The installed ``qahub`` with ``cache`` as its datasets cache, offline: (exit status, stdout, stderr)."""
    env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([*QAHUB, *map(str, argv)], capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stdout, done.stderr


def one_line(err):
    """The single line of an error output, with no traceback."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --- the reader gives load_dataset's rows


def test_reader_gives_the_rows_and_features_load_dataset_gives(sample_exports, tmp_path):
    """Every config and split of every corpus: equal to ``load_dataset`` on a fresh cache (ClassLabels as ints,
    nested features as datasets returns them)."""
    for corpus, folder in sample_exports.items():
        for config in reader.export_configs(folder):
            for split in reader.export_splits(folder, config):
                ours = reader.export_dataset(folder, config, split, corpus=corpus)
                theirs = datasets.load_dataset(str(folder), config, split=split, cache_dir=tmp_path / corpus)
                assert ours.features == theirs.features, (corpus, config, split)
                assert ours.to_list() == theirs.to_list(), (corpus, config, split)


# --- a rebuilt export and a same-named folder are read from their own files


def jemhopqa_source(root, answer=OLD):
    """A copy of the JEMHopQA sample whose first v1.2 dev answer is ``answer``."""
    shutil.copytree(registry.samples_dir("jemhopqa"), root)
    set_gold(root, answer)
    return root


def set_gold(root, answer):
    path = root / DEV
    records = json.loads(path.read_text(encoding="utf-8"))
    assert records[0]["answer"] == OLD
    records[0]["answer"] = answer
    path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")


def gold_predictions(path):
    """The sample's predictions (official JSON form) with the unchanged sample's v1.2 dev answers."""
    records = json.loads((registry.samples_dir("jemhopqa") / DEV).read_text(encoding="utf-8"))
    sample = json.loads((registry.samples_dir("jemhopqa") / "predictions.json").read_text(encoding="utf-8"))
    sample["answer"] = {record["qid"]: record["answer"] for record in records}
    path.write_text(json.dumps(sample, ensure_ascii=False), encoding="utf-8")
    return path


def em(folder, predictions, cache):
    code, out, err = qahub("--quiet", "evaluate", "jemhopqa", "--predictions", predictions, "--references", folder,
                           "--config", "v1.2", "--split", "validation", cache=cache)
    assert code == 0, err
    return json.loads(out)["a"]["em"]


def test_evaluate_reads_an_export_rebuilt_in_place(tmp_path):
    source, folder, cache = jemhopqa_source(tmp_path / "src"), tmp_path / "jemhopqa", tmp_path / "hf-cache"
    predictions = gold_predictions(tmp_path / "pred.json")
    build = ("--quiet", "build", "jemhopqa", "--data-dir", source, "--config", "v1.2", "--out", folder)
    assert qahub(*build, cache=cache)[0] == 0
    assert em(folder, predictions, cache) == 1.0
    set_gold(source, NEW)
    assert qahub(*build, "--overwrite", cache=cache)[0] == 0
    assert em(folder, predictions, cache) == pytest.approx(2 / 3)


def test_evaluate_reads_each_of_two_folders_of_the_same_name(tmp_path):
    cache, predictions = tmp_path / "hf-cache", gold_predictions(tmp_path / "pred.json")
    for name, answer in (("a", OLD), ("b", NEW)):
        source = jemhopqa_source(tmp_path / f"src-{name}", answer)
        assert qahub("--quiet", "build", "jemhopqa", "--data-dir", source, "--config", "v1.2",
                     "--out", tmp_path / name / "jemhopqa", cache=cache)[0] == 0
    assert em(tmp_path / "a" / "jemhopqa", predictions, cache) == 1.0
    assert em(tmp_path / "b" / "jemhopqa", predictions, cache) == pytest.approx(2 / 3)


# --- damaged and foreign exports: one line naming the file


def copy_export(exports, corpus, tmp_path):
    folder = tmp_path / corpus
    shutil.copytree(exports[corpus], folder)
    return folder


def truncate(shard):
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])


def jemhopqa_evaluate(folder, split, cache):
    predictions = registry.samples_dir("jemhopqa") / "predictions.json"
    return qahub("--quiet", "evaluate", "jemhopqa", "--predictions", predictions, "--references", folder,
                 "--config", "v1.2", "--split", split, cache=cache)


def test_a_truncated_shard_is_named_and_another_split_still_scores(sample_exports, tmp_path):
    folder = copy_export(sample_exports, "jemhopqa", tmp_path)
    train = folder / "v1.2" / "train-00000-of-00001.parquet"
    truncate(train)
    code, out, err = jemhopqa_evaluate(folder, "validation", tmp_path / "hf-cache")
    assert code == 0, err
    assert json.loads(out)["a"]["em"] >= 0
    truncate(folder / "v1.2" / "validation-00000-of-00001.parquet")
    code, out, err = jemhopqa_evaluate(folder, "validation", tmp_path / "hf-cache")
    line = one_line(err)
    assert (code, out) == (1, "")
    assert str(folder / "v1.2" / "validation-00000-of-00001.parquet") in line and "not a readable Parquet" in line


def test_a_shard_of_another_config_or_short_of_rows_is_named(sample_exports, tmp_path):
    folder = copy_export(sample_exports, "jemhopqa", tmp_path)
    shard = folder / "v1.2" / "validation-00000-of-00001.parquet"
    shutil.copyfile(sample_exports["limur"] / "all" / "validation-00000-of-00001.parquet", shard)
    line = one_line(jemhopqa_evaluate(folder, "validation", tmp_path / "hf-cache")[2])
    assert str(shard) in line and "are not the README's features" in line
    rows = datasets.load_dataset(str(sample_exports["jemhopqa"]), "v1.2", split="validation", cache_dir=tmp_path / "c")
    rows.select(range(2)).to_parquet(shard)
    line = one_line(jemhopqa_evaluate(folder, "validation", tmp_path / "hf-cache")[2])
    assert shard.name in line and "hold 2 rows, its README's dataset_info says 3" in line


def resave(folder, config, change, cache):
    """Every split of ``config`` re-saved through ``change(Dataset) -> Dataset``, as another tool would, and the
    README's features made those of the result."""
    readme = folder / "README.md"
    card = DatasetCard.load(readme)
    infos = DatasetInfosDict.from_dataset_card_data(card.data)
    for shard in sorted((folder / config).glob("*.parquet")):
        split = shard.name.split("-")[0]
        changed = change(datasets.load_dataset(str(folder), config, split=split, cache_dir=cache))
        changed.to_parquet(shard)
        infos[config].features = changed.features
    infos.to_dataset_card_data(card.data)
    card.save(readme)


def limur_evaluate(folder, cache):
    return qahub("--quiet", "evaluate", "limur", "--predictions", registry.samples_dir("limur") / "predictions.json",
                 "--references", folder, "--split", "test", cache=cache)


def test_limur_export_with_a_null_answer_names_the_shard_row_and_field(sample_exports, tmp_path):
    folder = copy_export(sample_exports, "limur", tmp_path)
    resave(folder, "all", lambda rows: rows.map(lambda row, i: {"outputs": None if i == 1 else row["outputs"]},
                                                 with_indices=True), tmp_path / "c")
    code, out, err = limur_evaluate(folder, tmp_path / "hf-cache")
    line = one_line(err)
    assert (code, out) == (1, "")
    assert "all/test-00000-of-00001.parquet: row 1: outputs is null" in line


def test_jemhopqa_export_with_a_null_answer_names_the_shard_row_and_field(sample_exports, tmp_path):
    folder = copy_export(sample_exports, "jemhopqa", tmp_path)
    resave(folder, "v1.2", lambda rows: rows.map(lambda row, i: {"answer": None if i == 2 else row["answer"]},
                                                  with_indices=True), tmp_path / "c")
    code, out, err = jemhopqa_evaluate(folder, "validation", tmp_path / "hf-cache")
    assert (code, out) == (1, "")
    assert "v1.2/validation-00000-of-00001.parquet: row 2: answer is null" in one_line(err)


def drop_task_type(rows):
    """LIMUR rows without ``meta.task_type`` (an export of another MERA layout)."""
    features = rows.features.copy()
    features["meta"] = {k: v for k, v in features["meta"].items() if k != "task_type"}
    return rows.map(lambda row: {"meta": {k: v for k, v in row["meta"].items() if k != "task_type"}},
                    features=features)


def test_limur_export_without_task_type_is_named(sample_exports, tmp_path):
    folder = copy_export(sample_exports, "limur", tmp_path)
    resave(folder, "all", drop_task_type, tmp_path / "c")
    code, out, err = limur_evaluate(folder, tmp_path / "hf-cache")
    line = one_line(err)
    assert (code, out) == (1, "")
    assert str(folder / "README.md") in line and "field meta.task_type is missing" in line


def test_jeopardy_export_without_answer_is_named(sample_exports, tmp_path):
    folder = copy_export(sample_exports, "jeopardy", tmp_path)
    resave(folder, "extended", lambda rows: rows.remove_columns("answer"), tmp_path / "c")
    code, out, err = qahub("--quiet", "evaluate", "jeopardy_meteor", "--predictions",
                           registry.samples_dir("jeopardy") / "predictions.json", "--references", folder,
                           "--config", "extended", "--split", "train", cache=tmp_path / "hf-cache")
    line = one_line(err)
    assert (code, out) == (1, "")
    assert str(folder / "README.md") in line and "field answer is missing" in line


@pytest.mark.parametrize("corpus, shard", [
    ("jemhopqa", "v1.2/train-00000-of-00001.parquet"),  # the few-shot split
    ("topical_chat", "reading_sets/test_freq-00000-of-00001.parquet"),  # a config the task's docs join
])
def test_harness_tasks_refuse_an_export_with_a_truncated_shard(sample_exports, tmp_path, corpus, shard):
    folder = copy_export(sample_exports, corpus, tmp_path)
    shard = folder / shard
    truncate(shard)
    code, out, err = qahub("--quiet", "harness-tasks", "--out", tmp_path / "tasks", "--dataset",
                           f"{corpus}={folder}", cache=tmp_path / "hf-cache")
    line = one_line(err)
    assert code == 1 and str(shard) in line and "not a readable Parquet" in line
    assert not (tmp_path / "tasks").exists()
