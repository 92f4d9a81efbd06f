"""The training configs of an export (issue 38): ``sft`` rows are the qahub tasks' own rendering of their training
documents, as lm-eval renders them, and no row holds a document a qahub task evaluates."""

import dataclasses
import json
import re
import shutil
import types
from pathlib import Path

import datasets
import pytest
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard
from hypothesis import event, given, settings
from hypothesis import strategies as st

from qahub import cli, decontaminate, harness, planning, registry, training
from qahub.decontaminate import Checker, EvaluationIndex, Texts, ngrams, words
from qahub.export import ExportError
from qahub.export.writer import export
from qahub.testing import shared_data

CORPORA = registry.corpus_names()
ROOT = Path(__file__).resolve().parents[1]


def _sft(folder, split="train"):
    return datasets.load_dataset(str(folder), "sft", split=split)


@pytest.fixture(scope="module")
def lm_eval_tasks(sample_exports, tmp_path_factory):
    """lm-eval's own task objects of every qahub task, on the sample exports (their generated task folder)."""
    pytest.importorskip("lm_eval", reason="lm-eval is the [harness] extra")
    from lm_eval.tasks import TaskManager

    folder = tmp_path_factory.mktemp("tasks") / "tasks"
    plan = harness.write_task_folder(folder, dict(sample_exports))
    return TaskManager(include_path=str(folder), include_defaults=False).load(list(plan))["tasks"]


@pytest.mark.parametrize("corpus", CORPORA)
def test_sft_rows_are_lm_evals_rendering_of_the_tasks_training_documents(corpus, sample_exports, lm_eval_tasks):
    """Each row is lm-eval's doc_to_text and doc_to_target of the training document it names, and every training
    document of every task is a row, a duplicate of one, or counted dropped, as the card says."""
    export = sample_exports[corpus]
    rows = _sft(export)
    assert rows.features == training.features("sft")
    names = list(planning.task_api(corpus).TASKS)
    assert set(rows["task"]) <= set(names) and len(rows) > 0
    pairs = {(row["prompt"][0]["content"], row["completion"][0]["content"]) for row in rows}
    sources, seen = training.Layout.of(corpus, str(export)).sources, {"documents": 0, "duplicates": 0, "dropped": 0}
    assert set(sources) == set(names)
    for name in names:
        task = lm_eval_tasks[name]
        config, wanted = sources[name]
        # the train split, or (LIMUR's sample has none) the few-shot pool, which lm-eval's fewshot_docs() reads;
        # Jeopardy's task runs on `extended`, whose only split it evaluates: its rows come from `qa`'s train,
        # rendered here by the same lm-eval task's doc_to_text
        assert wanted == {"train": task.config.fewshot_split} and task.config.fewshot_split in {"train", "shots"}
        if config == task.config.dataset_name:
            docs = list(task.fewshot_docs())
        else:
            docs = list(training.task_docs(corpus, name, str(export), config, wanted["train"]))
        mine = {row["position"]: row for row in rows if row["task"] == name}
        assert {(row["config"], row["split"]) for row in mine.values()} <= {(config, wanted["train"])}
        for position, doc in enumerate(docs):
            text, target = task.doc_to_text(doc), task.doc_to_target(doc)
            seen["documents"] += 1
            if position not in mine:
                seen["duplicates" if (text, target) in pairs else "dropped"] += 1
                continue
            row = mine[position]
            assert row["prompt"] == [{"role": "user", "content": text}]
            assert row["completion"] == [{"role": "assistant", "content": target}]
            assert row["id"] == str(planning.task_api(corpus).TASKS[name].doc_id(doc) or position)
    counts = DatasetCard.load(export / "README.md").data.to_dict()["qahub_decontamination"]["sft"]["train"]
    assert seen == {"documents": counts["documents"], "duplicates": counts["duplicates"],
                    "dropped": counts["exact"] + counts["ngram"]}
    assert counts["rows"] == len(rows) == counts["documents"] - seen["duplicates"] - seen["dropped"]


@pytest.mark.parametrize("corpus", CORPORA)
def test_each_training_config_streams_with_its_chat_features(corpus, sample_exports):
    for config in registry.training_configs(corpus):
        streamed = datasets.load_dataset(str(sample_exports[corpus]), config, split="train", streaming=True)
        loaded = datasets.load_dataset(str(sample_exports[corpus]), config, split="train")
        assert streamed.features == loaded.features == training.features(config)
        assert list(streamed) == loaded.to_list()


@pytest.mark.parametrize("corpus, config, key, turn", [
    ("doc2dial", "dialogue_domain", "dial_id",
     lambda t: ("assistant" if t["role"] == "agent" else "user", t["utterance"])),
    ("topical_chat", "conversations", "conversation_id",
     lambda t: ("assistant" if t["agent"] == 1 else "user", t["message"])),
])
def test_messages_rows_are_whole_training_conversations(corpus, config, key, turn, sample_exports):
    """Each row is its source conversation up to the trained agent's last turn, roles mapped."""
    assert "messages" in registry.training_configs(corpus)
    folder = str(sample_exports[corpus])
    rows = datasets.load_dataset(folder, "messages", split="train").to_list()
    source = {row[key]: row for row in datasets.load_dataset(folder, config, split="train")}
    assert rows and {row["id"] for row in rows} <= set(source)
    for row in rows:
        system, *turns = row["messages"]
        assert system["role"] == "system" and system["content"]
        expected = [turn(t) for t in source[row["id"]]["turns"]]
        while expected[-1][0] != "assistant":  # up to the trained agent's last turn
            expected.pop()
        assert [(m["role"], m["content"]) for m in turns] == expected


def test_words_cut_cjk_into_characters_and_drop_punctuation():
    assert words("Hello, World! 東京タワー") == ["hello", "world", "東", "京", "タ", "ワ", "ー"]
    assert ngrams("one two three", n=3) == ngrams("One, two; THREE.", n=3)
    assert ngrams("too short", n=13) == set()


def _texts(question, reply=""):
    """A question-answer document's Texts: its question checked by exact match, its question and reply by
    n-grams."""
    return Texts((question,), reply)


def test_the_index_finds_an_exact_question_and_a_shared_13_gram_and_nothing_else():
    index = EvaluationIndex()
    long = "the quick brown fox jumps over the lazy dog near the river bank at dawn"
    index.add(_texts("Who wrote War and Peace?", long))
    check = Checker(index)
    assert check.why(_texts("who wrote war and peace", "Tolstoy")) == "exact"
    assert check.why(_texts("Another question", "so " + long)) == "ngram"
    assert check.why(_texts("Who wrote Anna Karenina?", "Tolstoy")) is None


def test_a_dialogue_question_is_matched_whole_whichever_its_turns():
    """A dialogue turn's question is its turns and reply joined by newlines, then normalised: the same words cut
    into other turns are the same question (as when the whole text is normalised at once)."""
    index = EvaluationIndex()
    index.add(Texts(("Hi there!", "", "How are you?"), "Fine.", dialogue=True))
    check = Checker(index)
    assert check.why(Texts(("hi", "there how are"), "you fine", dialogue=True)) == "exact"
    assert check.why(Texts(("hi there",), "how are you", dialogue=True)) is None
    assert check.why(Texts(("hi there", "how are you"), "fine")) is None  # not a dialogue: the reply is no part


def test_a_shared_japanese_template_phrase_is_not_an_overlap_but_a_shared_question_is():
    # real JEMHopQA train/dev questions: 13 characters in common (a template phrase), not one question
    index = EvaluationIndex()
    index.add(_texts("徳川慶喜と徳川恒孝、どちらが先に生まれましたか？"))
    check = Checker(index)
    assert check.why(_texts("石原裕次郎と仲代達矢、どちらが先に生まれましたか？")) is None
    long = "『シアー・ハート・アタック』と『戦慄の王女』、ロックフィールド・スタジオで録音されたのはどちらですか？"
    index.add(_texts(long))
    assert check.why(_texts("では、" + long[:-5])) == "ngram"


def test_a_text_mixing_scripts_is_cut_into_ngrams_as_its_words_say():
    """A CJK character is a word by itself only where it starts one; a text whose words are mostly such characters
    is cut into 26-grams, any other into 13-grams."""
    assert words("abc東京 東京") == ["abc東京", "東", "京"]
    assert ngrams("abc東京 " * 30) == ngrams("abc東京 " * 30, n=13) != set()  # no one-character word
    assert ngrams("abc def 東 " * 10) == ngrams("abc def 東 " * 10, n=13)  # a third
    assert ngrams("abc 東京 " * 10) == ngrams("abc 東京 " * 10, n=26) != set()  # two thirds
    assert ngrams("just english words " * 5) == ngrams("just english words " * 5, n=13) != set()


LONG = "『星の歌』を作詞した人物と『月の歌』を作曲した人物は、どちらが先に音楽活動を始めましたか？"


def _planted_jemhopqa(tmp_path):
    """The bundled JEMHopQA sample with two evaluation (dev) documents planted in v1.2's train file: one as it is,
    one reworded at both ends (not an exact match, but its middle 26 characters, CJK_N, in common)."""
    files = shutil.copytree(registry.samples_dir("jemhopqa"), tmp_path / "jemhopqa-files")
    train, dev_file = files / "corpus_ver1.2" / "train_ver1.2.json", files / "corpus_ver1.2" / "dev_ver1.2.json"
    dev = json.loads(dev_file.read_text(encoding="utf-8"))
    dev.append({**dev[0], "qid": "dev-long", "question": LONG})
    dev_file.write_text(json.dumps(dev, ensure_ascii=False), encoding="utf-8")
    rows = json.loads(train.read_text(encoding="utf-8"))
    copied = {**dev[0], "qid": "planted-exact"}
    reworded = {**dev[0], "qid": "planted-ngram", "question": "ところで、" + LONG[3:-4] + "か、教えてください。"}
    train.write_text(json.dumps([*rows, copied, reworded], ensure_ascii=False), encoding="utf-8")
    return files, len(rows)


def test_an_evaluation_document_planted_in_a_training_file_is_dropped_and_counted(tmp_path, capsys):
    files, clean = _planted_jemhopqa(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["build", "jemhopqa", "--data-dir", str(files), "--out", str(out), "--config", "sft"]) == 0
    printed = capsys.readouterr().out
    rows = _sft(out)
    assert not {"planted-exact", "planted-ngram"} & set(rows["id"])
    tasks = len(planning.task_api("jemhopqa").TASKS)
    assert len(rows) == clean * tasks
    counts = DatasetCard.load(out / "README.md").data.to_dict()["qahub_decontamination"]["sft"]["train"]
    assert counts == {"documents": (clean + 2) * tasks, "rows": clean * tasks, "exact": tasks, "ngram": tasks,
                      "duplicates": 0}
    # the build printed the card's counts, and the card states the rule
    assert (f"jemhopqa/sft/train: {clean * tasks} rows of {(clean + 2) * tasks} training documents; dropped as "
            f"overlapping an evaluated document: {tasks} exact, {tasks} n-gram; 0 duplicates") in printed
    text = (out / "README.md").read_text(encoding="utf-8")
    assert "## Training configs" in text and "13-gram" in text
    assert f"| sft | train | {(clean + 2) * tasks} | {clean * tasks} | {tasks} | {tasks} | 0 |" in text
    # only the asked config is in the export, though every builder config was built to make it
    assert datasets.get_dataset_config_names(str(out)) == ["sft"]


def test_the_sample_exports_say_their_training_configs_in_the_card(sample_exports):
    """The card's YAML, read by datasets' own parsers (as the Hub's viewer and load_dataset read it), lists each
    training config with its files and its chat features."""
    for corpus in CORPORA:
        data = DatasetCard.load(sample_exports[corpus] / "README.md").data
        card = data.to_dict()
        assert set(card["qahub_decontamination"]) == set(registry.training_configs(corpus))
        listed, infos = MetadataConfigs.from_dataset_card_data(data), DatasetInfosDict.from_dataset_card_data(data)
        for config in registry.training_configs(corpus):
            assert listed[config]["data_files"] == [{"split": "train", "path": f"{config}/train-*"}]
            assert infos[config].features == training.features(config)
        assert set(datasets.get_dataset_config_names(str(sample_exports[corpus]))) == \
            set(registry.export_config_names(corpus))


def test_the_training_configs_are_made_from_the_build_itself_and_the_card_is_written_once(tmp_path, monkeypatch):
    """Issue 44: no temporary card. The training configs are made while the staged folder holds shards only (no
    README.md: nothing reads it as an export), and the card is written once, at the end, with every config."""
    from qahub.export import writer

    seen, cards = [], []
    real_training, real_card = training.write_training, writer.write_card

    def spy_training(corpus, location, folder, *args):
        seen.append(sorted(path.name for path in folder.iterdir()))
        return real_training(corpus, location, folder, *args)

    def spy_card(corpus, folder, infos, *args, **kwargs):
        cards.append(sorted(infos))
        return real_card(corpus, folder, infos, *args, **kwargs)

    monkeypatch.setattr(training, "write_training", spy_training)
    monkeypatch.setattr(writer, "write_card", spy_card)
    out = tmp_path / "out"
    export("jemhopqa", out, data_dir=registry.samples_dir("jemhopqa"), cache_dir=tmp_path / "cache", sample=True)
    configs = registry.export_config_names("jemhopqa")
    assert seen == [sorted(c for c in configs if c not in registry.training_configs("jemhopqa"))]  # shards only
    assert cards == [sorted(configs)]
    assert sorted(datasets.get_dataset_config_names(str(out))) == sorted(configs)


@pytest.mark.parametrize("corpus", CORPORA)
def test_the_training_configs_made_in_the_build_are_those_made_from_the_finished_export(corpus, sample_exports,
                                                                                        tmp_path):
    """The build reads its own shards through its own description of them (``reader.Export.described``): the
    training shards it wrote are byte for byte those ``write_training`` makes reading the finished export."""
    folder = sample_exports[corpus]
    made = training.write_training(corpus, str(folder), tmp_path, registry.training_configs(corpus), 1 << 29)
    for config in made:
        ours = sorted(path.relative_to(tmp_path) for path in (tmp_path / config).glob("*.parquet"))
        assert ours == sorted(path.relative_to(folder) for path in (folder / config).glob("*.parquet"))
        for shard in ours:
            assert (tmp_path / shard).read_bytes() == (folder / shard).read_bytes(), shard


def test_an_unknown_config_names_the_training_configs():
    with pytest.raises(KeyError, match="sft, messages"):
        export("doc2dial", "unused", configs=["chat"])


def test_qahub_list_shows_the_training_configs(capsys):
    assert cli.main(["list"]) == 0
    printed = capsys.readouterr().out
    for corpus in CORPORA:
        for config in registry.training_configs(corpus):
            assert re.search(rf"^{corpus}\s+{config}\s+train$", printed, re.M), (corpus, config)


def test_a_build_without_a_train_split_skips_the_default_training_configs_and_refuses_asked_ones(tmp_path):
    files = shutil.copytree(registry.samples_dir("topical_chat"), tmp_path / "files")
    for train in files.glob("**/train.json"):
        train.unlink()
    options = {"present_splits_only": True}
    report = export("topical_chat", tmp_path / "out", data_dir=files, builder_options=options)
    assert [config for config, _ in report.skipped] == ["sft", "messages"]
    assert "no qahub task of topical_chat has a train split" in report.skipped[0][1]
    assert "sft" not in datasets.get_dataset_config_names(str(tmp_path / "out"))
    with pytest.raises(ValueError, match="no qahub task of topical_chat has a train split"):
        export("topical_chat", tmp_path / "asked", configs=["conversations", "sft"], data_dir=files,
               builder_options=options)


def test_a_split_a_task_evaluates_is_never_a_training_source(sample_exports):
    """Jeopardy's ``extended`` config has only train, which ``qahub_jeopardy`` evaluates where it is the config the
    task runs on: its sft rows come from ``qa``'s train, and ``extended``'s train is checked against as evaluated."""
    layout = training.Layout.of("jeopardy", str(sample_exports["jeopardy"]))
    assert layout.sources["qahub_jeopardy"][0] == "qa"
    assert ("qahub_jeopardy", "extended", "train") in layout.evaluated
    spec = planning.task_api("jeopardy").TASKS["qahub_jeopardy"]
    assert training.evaluated_splits(spec, ["train"]) == ["train"]
    assert training.evaluated_splits(spec, ["train", "validation"]) == ["validation"]


def _declaring(corpus, **changes):
    """``corpus``'s task_api with every task's TaskSpec changed (e.g. the splits it evaluates)."""
    real = planning.task_api(corpus)
    declared = {name: dataclasses.replace(spec, **changes) for name, spec in real.TASKS.items()}
    return types.SimpleNamespace(TASKS=declared, TRAINING_TEXTS=real.TRAINING_TEXTS,
                                 CONVERSATION=getattr(real, "CONVERSATION", None))


def _made(corpus, sample_exports, out, configs=("sft",)):
    made = training.write_training(corpus, str(sample_exports[corpus]), out, list(configs), 1 << 29)
    return made, {config: {split: datasets.load_dataset("parquet", split="train", data_files=str(
        out / config / f"{split}-*.parquet")) for split in entry.counts} for config, entry in made.items()}


def test_a_validation_split_no_task_evaluates_is_a_validation_split_of_training_rows(sample_exports, tmp_path,
                                                                                    monkeypatch):
    """LIMUR's task evaluates test and validation: its sft rows are train's (here MERA's shots) only. Declared
    evaluating test alone, the validation split is training data: every one of its documents a row of a
    ``validation`` split, checked against test's documents."""
    made, _ = _made("limur", sample_exports, tmp_path / "as-declared")
    assert list(made["sft"].counts) == ["train"]

    fake = _declaring("limur", splits=["test"])
    monkeypatch.setattr(planning, "task_api", lambda corpus: fake)
    layout = training.Layout.of("limur", str(sample_exports["limur"]))
    assert layout.evaluated == [("qahub_limur", "all", "test")]
    assert layout.sources == {"qahub_limur": ("all", {"train": "shots", "validation": "validation"})}
    made, rows = _made("limur", sample_exports, tmp_path / "test-only")
    assert list(made["sft"].counts) == ["train", "validation"]
    spec = fake.TASKS["qahub_limur"]
    docs = training.task_docs("limur", "qahub_limur", str(sample_exports["limur"]), "all", "validation")
    assert len(docs) > 0 and made["sft"].counts["validation"].documents == len(docs)
    assert [(row["prompt"][0]["content"], row["completion"][0]["content"], row["split"], row["position"])
            for row in rows["sft"]["validation"]] == [
        (spec.prompt(doc), spec.target(doc), "validation", i) for i, doc in enumerate(docs)]
    assert made["sft"].evaluated == len(training.task_docs("limur", "qahub_limur", str(sample_exports["limur"]),
                                                           "all", "test"))


def test_a_messages_config_gets_the_unevaluated_validation_conversations_too(sample_exports, tmp_path,
                                                                           monkeypatch):
    made, _ = _made("doc2dial", sample_exports, tmp_path / "as-declared", ("sft", "messages"))
    assert {config: list(entry.counts) for config, entry in made.items()} == {"sft": ["train"],
                                                                              "messages": ["train"]}
    fake = _declaring("doc2dial", splits=["test"])
    monkeypatch.setattr(planning, "task_api", lambda corpus: fake)
    made, rows = _made("doc2dial", sample_exports, tmp_path / "test-only", ("sft", "messages"))
    assert {config: list(entry.counts) for config, entry in made.items()} == {
        "sft": ["train", "validation"], "messages": ["train", "validation"]}
    dialogues = datasets.load_dataset(str(sample_exports["doc2dial"]), "dialogue_domain", split="validation")
    assert rows["messages"]["validation"]["id"] == dialogues["dial_id"]
    assert set(rows["messages"]["validation"]["split"]) == {"validation"}


REAL_JEMHOPQA = shared_data("jemhopqa")
PRINTED = re.compile(r"^(\w+)/(\w+)/(\w+): ([\d,]+) rows of ([\d,]+) training documents; dropped as overlapping an "
                     r"evaluated document: ([\d,]+) exact, ([\d,]+) n-gram; ([\d,]+) duplicates$", re.M)


@pytest.mark.skipif(REAL_JEMHOPQA is None, reason="../shared/data/jemhopqa is absent")
def test_on_the_real_jemhopqa_the_card_and_the_readme_say_the_counts_the_build_printed(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["build", "jemhopqa", "--data-dir", str(REAL_JEMHOPQA), "--out", str(out), "--config", "sft"]) == 0
    printed = {(m[1], m[2], m[3]): dict(zip(("rows", "documents", "exact", "ngram", "duplicates"),
                                            (int(n.replace(",", "")) for n in m.groups()[3:])))
               for m in PRINTED.finditer(capsys.readouterr().out)}
    card = DatasetCard.load(out / "README.md")
    counts = card.data.to_dict()["qahub_decontamination"]
    assert printed == {("jemhopqa", config, split): c for config, s in counts.items() for split, c in s.items()}
    c = counts["sft"]["train"]
    assert f"| sft | train | {c['documents']:,} | {c['rows']:,} | {c['exact']:,} | {c['ngram']:,} |" in card.text
    readme = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    assert f"the real JEMHopQA keeps {c['rows']:,} of {c['documents']:,}" in readme


# --- issue 42 item 17: normalised text, n-grams across turns


def test_text_is_nfkc_normalised_and_case_and_yo_folded():
    assert words("２００１年にＣＤを出した") == words("2001年にCDを出した") == ["2001年にcdを出した"]
    assert words("ЁЛКА, ёж и Еж") == ["елка", "еж", "и", "еж"]
    assert words("е\u0308лка") == ["елка"]  # ё written as е and a combining diaeresis, composed by NFKC first


def test_a_russian_question_written_with_e_for_yo_is_the_same_question():
    index = EvaluationIndex()
    long = "Этот полководец ещё в юности прочёл всё, что нашёл о походах Александра, и решил идти его путём"
    index.add(_texts("Кто написал «Ёжика в тумане»?", "Козлов"))
    index.add(_texts(long, "Суворов"))
    check = Checker(index)
    assert check.why(_texts("кто написал ежика в тумане", "Козлов")) == "exact"
    assert check.why(_texts("Вопрос: " + long.replace("ё", "е").upper(), "другой ответ")) == "ngram"


FIFTEEN = "the rover found frozen water under the red dust near the south pole of mars today"


def test_a_reply_split_across_two_turns_shares_its_13_grams():
    """A 15-word evaluated reply: each half, a turn of its own, is shorter than 13 words, but the run of both is
    not."""
    index = EvaluationIndex()
    index.add(Texts(("Hello! Do you follow space news?",), FIFTEEN, dialogue=True))
    check = Checker(index)
    halves = FIFTEEN.split()
    split = Texts(("Hi!", "Hey, how are you?", " ".join(halves[:8])), " ".join(halves[8:]), dialogue=True)
    assert check.why(split) == "ngram"
    assert check.why(Texts(("Hi!", " ".join(halves[:8])), "Something else entirely.", dialogue=True)) is None
    # a turn of more than n - 1 words ends the run that reaches into the next turn
    assert check.why(Texts((" ".join(halves[:8]), "a b c d e f g h i j k l m"), " ".join(halves[8:]),
                           dialogue=True)) is None


# few words, mostly one, so that turns share 13-grams; Ё/е and CJK ones for the folding and the 26-grams
_TURNS = st.lists(st.lists(st.sampled_from(["a"] * 8 + ["b", "Ё", "е", "東", "京", "ab東"]), max_size=12).map(" ".join),
                  min_size=1, max_size=7)


def _turn_docs(turns):
    return [Texts(tuple(turns[:k]), turns[k], dialogue=True) for k in range(len(turns))]


def _plain_verdict(evaluated, texts):
    """The rule written out whole: the question is every word of the turns and reply; the n-grams are those of
    that one run of words, n by the whole."""
    def run(texts):
        tokens = [w for part in (*texts.parts, texts.reply) for w in words(part)]
        cjk = sum(len(w) == 1 and bool(decontaminate._HAS_CJK(w)) for w in tokens)
        n = decontaminate.size(len(tokens), cjk)
        return " ".join(tokens), {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}
    questions, grams = set(), set()
    for doc in evaluated:
        question, own = run(doc)
        questions.add(question or None)  # an empty question is no question
        grams |= own
    question, own = run(texts)
    return "exact" if question in questions else "ngram" if own & grams else None


@settings(max_examples=300, deadline=None)
@given(st.lists(_TURNS, min_size=1, max_size=3), st.lists(_TURNS, min_size=1, max_size=3))
def test_a_dialogues_verdicts_are_the_rule_written_out_whole(evaluated, training_conversations):
    """The checks remember each turn's history (the turn before's turns and reply) and each distinct piece; with
    what they remember forgotten every few documents, the verdicts are still those of the rule read plainly."""
    evaluated = [doc for turns in evaluated for doc in _turn_docs(turns)]
    index = EvaluationIndex()
    index._grams.RUNS = 3
    for doc in evaluated:
        index.add(doc)
    check = Checker(index)
    check._grams.RUNS = 3
    for doc in [doc for turns in training_conversations for doc in _turn_docs(turns)]:
        verdict = check.why(doc)
        event(f"verdict {verdict}")
        assert verdict == _plain_verdict(evaluated, doc)


def _conversation(turns, config="A"):
    """A Topical-Chat conversation record of ``turns`` ([(agent, message)])."""
    return {"article_url": "https://www.example.com/a", "config": config, "conversation_rating": {"agent_1": "Good",
            "agent_2": "Good"}, "content": [
        {"message": message, "agent": agent, "sentiment": "Neutral", "knowledge_source": ["Personal Knowledge"],
         "turn_rating": "Good"} for agent, message in turns]}


def _add(path, records: dict):
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), **records}), encoding="utf-8")


def _planted_topical_chat(tmp_path):
    """The bundled Topical-Chat sample with two test conversations planted in train: one whole after a greeting
    exchange, and the 15-word reply of the other cut into two turns; {planted id: the test replies it holds}."""
    files = shutil.copytree(registry.samples_dir("topical_chat"), tmp_path / "files")
    conversations = files / "conversations"
    test = json.loads((conversations / "test_freq.json").read_text(encoding="utf-8"))
    (whole_id, whole), (split_id, split) = list(test.items())
    greeting = [("agent_1", "Hi!"), ("agent_2", "Hello, how are you?")]
    turns = [(turn["agent"], turn["message"]) for turn in whole["content"]]
    long = split["content"][1]["message"]
    assert len(long.split()) == 15  # the sample's 15-word test reply
    halves = long.split()
    cut = [("agent_1", "Good morning."), ("agent_2", " ".join(halves[:8])), ("agent_1", " ".join(halves[8:])),
           ("agent_2", "Indeed.")]
    planted = {"t_planted-whole": _conversation(greeting + turns, whole["config"]),
               "t_planted-split": _conversation(cut, split["config"])}
    _add(conversations / "train.json", planted)
    for kind in ("pre-build", "post-build"):  # each conversation has its reading set: the test one's
        sets = json.loads((files / "reading_sets" / kind / "test_freq.json").read_text(encoding="utf-8"))
        _add(files / "reading_sets" / kind / "train.json", {"t_planted-whole": sets[whole_id],
                                                            "t_planted-split": sets[split_id]})
    replies = {"t_planted-whole": {m for _, m in turns[1:]}, "t_planted-split": {" ".join(halves[8:])}}
    return files, replies


def test_a_test_conversation_planted_in_train_after_a_greeting_or_cut_across_turns_is_dropped(tmp_path, capsys):
    """No training row holds a test reply: not the planted conversation's turns (no turn of it is 13 words, and
    the greeting makes its history another), nor the 15-word reply cut in two; and the printed counts are the rows
    written and the card's."""
    files, replies = _planted_topical_chat(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["build", "topical_chat", "--data-dir", str(files), "--out", str(out), "--config", "sft",
                     "--config", "messages"]) == 0
    printed = {(m[2], m[3]): dict(zip(("rows", "documents", "exact", "ngram", "duplicates"),
                                      (int(n.replace(",", "")) for n in m.groups()[3:])))
               for m in PRINTED.finditer(capsys.readouterr().out)}
    sft, messages = _sft(out), datasets.load_dataset(str(out), "messages", split="train")
    for planted, held in replies.items():
        mine = [row["completion"][0]["content"] for row in sft if row["id"].startswith(planted + ":")]
        assert not held & set(mine), planted
        assert planted not in messages["id"]
    assert "t_planted-whole:1" in sft["id"]  # the greeting's own reply is no test reply: kept
    counts = DatasetCard.load(out / "README.md").data.to_dict()["qahub_decontamination"]
    assert printed == {(config, split): c for config, s in counts.items() for split, c in s.items()}
    assert counts["sft"]["train"]["rows"] == len(sft) and counts["messages"]["train"]["rows"] == len(messages)
    assert counts["messages"]["train"]["ngram"] == 2


def _planted_fullwidth_jemhopqa(tmp_path):
    """The bundled JEMHopQA sample with a dev question written in ASCII digits and letters, planted in v1.2's train
    file with full-width ones."""
    files = shutil.copytree(registry.samples_dir("jemhopqa"), tmp_path / "jemhopqa-files")
    train, dev_file = files / "corpus_ver1.2" / "train_ver1.2.json", files / "corpus_ver1.2" / "dev_ver1.2.json"
    dev = json.loads(dev_file.read_text(encoding="utf-8"))
    question = "2001年にCDデビューした歌手と1999年にDVDを出したバンド、どちらが先に結成されましたか？"
    dev.append({**dev[0], "qid": "dev-ascii", "question": question})
    dev_file.write_text(json.dumps(dev, ensure_ascii=False), encoding="utf-8")
    wide = question.translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)})
    assert wide.startswith("２００１年にＣＤ")
    rows = json.loads(train.read_text(encoding="utf-8"))
    train.write_text(json.dumps([*rows, {**dev[-1], "qid": "planted-wide", "question": wide}], ensure_ascii=False),
                     encoding="utf-8")
    return files, len(rows)


def test_a_dev_question_planted_with_full_width_digits_and_letters_is_dropped(tmp_path, capsys):
    files, clean = _planted_fullwidth_jemhopqa(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["build", "jemhopqa", "--data-dir", str(files), "--out", str(out), "--config", "sft"]) == 0
    rows, tasks = _sft(out), len(planning.task_api("jemhopqa").TASKS)
    assert "planted-wide" not in rows["id"] and len(rows) == clean * tasks
    counts = DatasetCard.load(out / "README.md").data.to_dict()["qahub_decontamination"]["sft"]["train"]
    assert counts["exact"] == tasks and counts["rows"] == len(rows)
    assert f"jemhopqa/sft/train: {len(rows)} rows of {(clean + 1) * tasks} training documents" in capsys.readouterr().out


# --- issue 42 item 18: an empty split loads


def test_an_empty_training_split_is_left_out_of_the_export_and_the_build_says_why(tmp_path, capsys):
    """Every training conversation is an evaluated one: ``sft`` and ``messages`` have no train row. They were
    written as Parquet that datasets could not load ("BatchSize must be greater than 0"); datasets cannot load an
    empty split at all ("Instruction 'train' corresponds to no data"), so each is left out of the folder and the
    card, and the build says so in one line each; the builder config asked beside them loads."""
    files = shutil.copytree(registry.samples_dir("topical_chat"), tmp_path / "files")
    for kind in ("conversations", "reading_sets/pre-build", "reading_sets/post-build"):
        test = json.loads((files / kind / "test_freq.json").read_text(encoding="utf-8"))
        (files / kind / "train.json").write_text(json.dumps({f"t_copy-{k}": v for k, v in test.items()}),
                                                 encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["build", "topical_chat", "--data-dir", str(files), "--out", str(out), "--config",
                     "conversations", "--config", "sft", "--config", "messages"]) == 0
    printed = capsys.readouterr().out
    assert "topical_chat/sft/train: 0 rows of" in printed
    for config in ("sft", "messages"):
        assert (f"topical_chat/{config}/train: left out of the export and its card: it has no row (datasets cannot "
                f"load an empty split); so is the {config} config, which has no other split") in printed
        assert not (out / config).exists()
    assert datasets.get_dataset_config_names(str(out)) == ["conversations"]
    card = DatasetCard.load(out / "README.md")
    missing = card.data.to_dict()["qahub_partial"]["missing"]  # reading_sets and asr were not asked for
    assert {entry["config"] for entry in missing} == {"reading_sets", "asr"}  # sft and messages were made
    assert "Left out of the configs above, having no row" in card.text
    for split in registry.splits("topical_chat", "conversations"):
        assert len(datasets.load_dataset(str(out), "conversations", split=split)) > 0


def test_a_training_config_with_no_row_at_all_is_refused_in_one_line(tmp_path):
    files = shutil.copytree(registry.samples_dir("topical_chat"), tmp_path / "files")
    for kind in ("conversations", "reading_sets/pre-build", "reading_sets/post-build"):
        test = json.loads((files / kind / "test_freq.json").read_text(encoding="utf-8"))
        (files / kind / "train.json").write_text(json.dumps({f"t_copy-{k}": v for k, v in test.items()}),
                                                 encoding="utf-8")
    with pytest.raises(ExportError, match=r"topical_chat: nothing to export: every split built has no row "
                                          r"\(sft/train\)"):
        export("topical_chat", tmp_path / "out", configs=["sft"], data_dir=files)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_shard_with_an_empty_row_group_fails_the_exports_own_load_check(tmp_path):
    """The export's own check reads every shard's row groups and loads every split it writes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from qahub.export.writer import check_loads

    features = training.features("sft")
    (tmp_path / "sft").mkdir()
    shard = tmp_path / "sft" / "train-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist([], schema=features.arrow_schema), shard)
    info = datasets.DatasetInfo(features=features, config_name="sft")
    info.splits = datasets.SplitDict(dataset_name="sft")
    info.splits.add(datasets.SplitInfo(name="train", num_examples=0, dataset_name="sft"))
    with pytest.raises(ExportError, match="train-00000-of-00001.parquet: holds an empty row group"):
        check_loads(tmp_path, {"sft": info})
