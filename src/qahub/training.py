"""The training configs of an export, made from its other configs when it is built (``export/writer.py`` calls
``write_training`` on the shards it has just written, read through its own description of them).

``sft``: one row per document of every qahub task of the corpus, from the task's training split only, in TRL's
conversational prompt-completion form: ``prompt`` one user message holding the task's own prompt
(``TaskSpec.prompt``: what lm-eval's ``doc_to_text`` gives, and what ``--apply_chat_template`` sends a chat model),
``completion`` one assistant message holding its target (``TaskSpec.target``, ``doc_to_target``); ``task``,
``id`` (the task's document id), and ``config``, ``split``, ``position`` (the document's place in the task's
documents of that split) to trace it back. ``messages`` (Topical-Chat, doc2dial): one row per training
conversation, the agent being trained the assistant, the other the user, the context a system message.

A row whose document overlaps a document a qahub task evaluates is dropped and counted (``decontaminate.py``);
a row repeating an earlier one (two tasks with the same prompt on the same training split) is kept once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from qahub import planning, tasks
from qahub.chat_features import MESSAGES, SFT, features
from qahub.decontaminate import RULE, Checker, EvaluationIndex, Texts
from qahub.gc_pause import gc_paused

TRAIN, VALIDATION = "train", "validation"
BATCH = 2000  # rows per Parquet row group


# --- what each corpus's task_api declares for these configs


def declared_texts(corpus: str, name: str) -> tuple:
    """``(questions, dialogue)``: task ``name``'s ``TRAINING_TEXTS`` entry in its corpus's task_api."""
    declared = getattr(planning.task_api(corpus), "TRAINING_TEXTS", {})
    if name not in declared:
        raise ValueError(f"task {name}: its task_api declares no TRAINING_TEXTS entry (which of its documents' text "
                         "is not template), so its training rows cannot be checked")
    return declared[name]


def texts_of(corpus: str, name: str, spec):
    """``doc -> Texts``: the non-template text of task ``name``'s documents, as its task_api's ``TRAINING_TEXTS``
    declares it."""
    questions, dialogue = declared_texts(corpus, name)

    def texts(doc) -> Texts:
        return Texts(tuple(questions(doc)), spec.target(doc), dialogue)

    return texts


# --- reading the tasks' documents at an export


def export_at(location):
    """The export to read: ``location`` itself when it is one (``qahub.export.reader.Export``; the writer's own
    description of a build in progress), else the export folder at ``location``."""
    from qahub.export.reader import Export

    return location if isinstance(location, Export) else Export(location, "an exported corpus")


def task_docs(corpus: str, name: str, location, config: str, split: str):
    """The documents of task ``name`` in ``split`` of ``config`` of the export at ``location`` (``export_at``), as
    its lm-eval task reads them (a ``datasets.Dataset``): rows fresh from the shards, checked against the corpus's
    builder; a config its docs join (doc2dial's documents, Topical-Chat's reading sets) read there too."""
    export, spec = export_at(location), planning.task_api(corpus).TASKS[name]
    rows = export.dataset(export.config(config), split, corpus=corpus)
    if not spec.docs:
        return rows
    return spec.docs(rows, str(export.folder), load=lambda _, joined, part: export.dataset(export.config(joined), part),
                     config_names=lambda _: list(export.configs),
                     split_names=lambda _, joined: list(export.patterns(export.config(joined))))


class Docs:
    """``task_docs`` at one location, each (config, split, docs function) read once: two tasks with the same
    documents (Topical-Chat's freq and rare on train) and the messages config share them."""

    def __init__(self, corpus: str, location):
        self.corpus, self.location, self.read = corpus, export_at(location), {}

    def key(self, name: str, config: str, split: str) -> tuple:
        return planning.task_api(self.corpus).TASKS[name].docs, config, split

    def __call__(self, name: str, config: str, split: str):
        key = self.key(name, config, split)
        if key not in self.read:
            self.read[key] = task_docs(self.corpus, name, self.location, config, split)
        return self.read[key]


class Checked:
    """The training documents of a task with their verdicts (``Checker.why``: None to keep one), each worked out
    once: the ``messages`` config checks the very documents its task's ``sft`` rows were checked on, and two tasks
    reading the same documents with the same text and target functions (Topical-Chat's freq and rare on train)
    share them."""

    def __init__(self, corpus: str, docs: Docs, checker: Checker):
        self.corpus, self.docs, self.checker, self.known = corpus, docs, checker, {}

    def __call__(self, name: str, config: str, split: str):
        """``(doc, verdict, target)`` of each document of task ``name`` in ``split`` of ``config``: ``target`` the
        task's target where the verdict is worked out now (the check reads it), else None."""
        spec = planning.task_api(self.corpus).TASKS[name]
        key = (self.docs.key(name, config, split), declared_texts(self.corpus, name), spec.target)
        rows = each(self.docs(name, config, split))
        if key in self.known:
            yield from ((doc, why, None) for doc, why in zip(rows, self.known[key]))
            return
        texts, verdicts = texts_of(self.corpus, name, spec), []
        for doc in rows:
            found = texts(doc)
            verdicts.append(self.checker.why(found))
            yield doc, verdicts[-1], found.reply  # the task's target
        self.known[key] = verdicts  # only once every document is checked


def each(rows, batch_size: int = 1000):
    """The rows of a ``datasets.Dataset`` as ``for row in rows`` gives them, read a batch at a time (a row at a
    time, ``datasets`` formats each row on its own: most of the time of a build)."""
    for batch in rows.iter(batch_size):
        yield from (dict(zip(batch, values)) for values in zip(*batch.values()))


@dataclass
class Layout:
    """Where each task's documents are at one export: its training source and the splits it evaluates."""

    configs: list[str]
    splits: dict  # {config: [split]}
    sources: dict = field(default_factory=dict)  # {task: (config, {split of the training config: its source})}
    evaluated: list = field(default_factory=list)  # [(task, config, split)]

    @classmethod
    def of(cls, corpus: str, location):
        export = export_at(location)
        configs = list(export.configs)
        layout = cls(configs, {c: list(export.patterns(c)) for c in configs})
        specs = planning.task_api(corpus).TASKS
        declared = {s for spec in specs.values() for s in spec.splits if s != TRAIN}
        for name, spec in specs.items():
            present = [c for c in spec.configs if c in layout.splits]
            layout.evaluated += [(name, c, s) for c in present for s in evaluated_splits(spec, layout.splits[c])]
        taken = {(c, s) for _, c, s in layout.evaluated}
        for name, spec in specs.items():
            present = [c for c in spec.configs if c in layout.splits]
            pools = [TRAIN] + ([spec.fewshot_split] if spec.fewshot_split not in declared else [])
            found = next(((c, s) for s in pools for c in present if s in layout.splits[c] and (c, s) not in taken),
                         None)
            if found:  # validation too where no task of the corpus evaluates it
                config, pool = found
                extra = {VALIDATION: VALIDATION} if VALIDATION in layout.splits[config] and VALIDATION not in declared \
                    else {}
                layout.sources[name] = (config, {TRAIN: pool, **extra})
        return layout


def evaluated_splits(spec, present: list[str]) -> list[str]:
    """The splits of one config a task may evaluate: every declared split but train, and train too where the config
    has no other declared split (Jeopardy's ``extended`` has only train, which ``qahub_jeopardy`` then evaluates:
    it is no training source)."""
    here = [s for s in spec.splits if s in present]
    others = [s for s in here if s != TRAIN]
    return others or here


# --- writing


@dataclass
class Counts:
    documents: int = 0
    rows: int = 0
    exact: int = 0
    ngram: int = 0
    duplicates: int = 0

    def as_dict(self) -> dict:
        return dict(vars(self))


class ShardWriter:
    """Rows of one split written as ``<folder>/<split>-NNNNN-of-NNNNN.parquet``, a new shard past ``max_bytes``."""

    def __init__(self, folder: Path, split: str, features, max_bytes: int):
        self.folder, self.split, self.features, self.max_bytes = folder, split, features, max_bytes
        self.batch, self.shards, self.writer, self.written = [], [], None, 0
        self.num_bytes = 0
        folder.mkdir(parents=True, exist_ok=True)

    def add(self, row: dict):
        self.batch.append(row)
        if len(self.batch) >= BATCH:
            self._flush()

    def _flush(self):
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.batch and self.writer is not None:
            return
        table = pa.Table.from_pylist(self.batch, schema=self.features.arrow_schema)
        self.batch = []
        if self.writer is None or self.written >= self.max_bytes:
            self._close_shard()
            self.shards.append(self.folder / f".{self.split}-{len(self.shards)}.parquet")
            self.writer = pq.ParquetWriter(self.shards[-1], table.schema)
            self.written = 0
        self.writer.write_table(table)
        self.written += table.nbytes
        self.num_bytes += table.nbytes

    def _close_shard(self):
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def close(self) -> int:
        """Write what is left, name the shards; their total size in bytes."""
        self._flush()
        self._close_shard()
        size = 0
        for index, shard in enumerate(self.shards):
            size += shard.stat().st_size
            shard.rename(self.folder / f"{self.split}-{index:05d}-of-{len(self.shards):05d}.parquet")
        return size


def write_training(corpus: str, location, folder: Path, configs: list[str], max_shard_bytes: int) -> dict:
    """Write ``configs`` (of ``config_names(corpus)``) of the export at ``location`` (``export_at``) into
    ``folder/<config>/``; ``{config: Made}``."""
    with gc_paused():  # a dict per document, a tuple per n-gram: the collector would walk them again and again
        return _write_training(corpus, location, folder, configs, max_shard_bytes)


def _write_training(corpus, location, folder, configs, max_shard_bytes) -> dict:
    start = time.perf_counter()  # indexing the evaluated documents is counted in the first config's seconds
    location = export_at(location)  # its card read once
    layout = Layout.of(corpus, location)
    if not layout.sources:
        raise ValueError(f"no qahub task of {corpus} has a {TRAIN} split (nor a few-shot split it "
                         "does not evaluate) in this build, so there is nothing to train on")
    docs = Docs(corpus, location)
    index = evaluation_index(corpus, layout, docs)
    checked = Checked(corpus, docs, Checker(index))
    rows = {SFT: _sft_rows, MESSAGES: _message_rows}
    made = {}
    for config in configs:
        info, counts = _write_config(config, folder, max_shard_bytes, rows[config](corpus, layout, checked))
        made[config] = Made(info, counts, index.documents, time.perf_counter() - start)
        start = time.perf_counter()
    return made


def evaluation_index(corpus: str, layout: Layout, docs: Docs) -> EvaluationIndex:
    """The index of every document a task of ``corpus`` evaluates; documents two tasks evaluate (JEMHopQA's answer
    and derivations tasks) read once, each task's texts of them indexed."""
    specs, index, readers = planning.task_api(corpus).TASKS, EvaluationIndex(), {}
    for name, config, split in layout.evaluated:
        readers.setdefault(docs.key(name, config, split), []).append((name, config, split))
    for evaluated in readers.values():
        texts = [texts_of(corpus, name, specs[name]) for name, _, _ in evaluated]
        for doc in each(docs(*evaluated[0])):
            for text in texts:
                index.add(text(doc))
    return index


@dataclass
class Made:
    """A training config written: its info, its counts by split, the evaluated documents it was checked against,
    the seconds it took."""

    info: object
    counts: dict
    evaluated: int
    seconds: float


def _write_config(config, folder, max_shard_bytes, rows_by_split):
    """Write each split's rows; the config's DatasetInfo and {split: Counts}."""
    import datasets
    from datasets.splits import SplitDict, SplitInfo

    feats = features(config)
    splits, counts, size = SplitDict(dataset_name=config), {}, 0
    for split, rows in rows_by_split.items():
        writer = ShardWriter(folder / config, split, feats, max_shard_bytes)
        count = Counts()
        for row in rows(count):
            writer.add(row)
        size += writer.close()
        splits.add(SplitInfo(name=split, num_bytes=writer.num_bytes, num_examples=count.rows, dataset_name=config))
        counts[split] = count
    info = datasets.DatasetInfo(features=feats, config_name=config, splits=splits)
    info.download_size, info.dataset_size = size, sum(s.num_bytes for s in splits.values())
    return info, counts


def _sft_rows(corpus, layout, checked) -> dict:
    """{split: rows(counts)}: the generator of each split's rows, counting into ``counts``."""
    splits = list(dict.fromkeys(s for _, wanted in layout.sources.values() for s in wanted))

    def rows(split):
        def generate(count):
            seen = set()
            for name, (config, wanted) in layout.sources.items():
                if split in wanted:
                    yield from _task_sft_rows(corpus, name, config, wanted[split], checked, count, seen)
        return generate

    return {split: rows(split) for split in splits}


def _task_sft_rows(corpus, name, config, source, checked, count, seen):
    """The sft rows of task ``name``'s documents in ``source`` of ``config``, but those ``checked`` drops and those
    already ``seen``."""
    spec = planning.task_api(corpus).TASKS[name]
    for position, (doc, why, target) in enumerate(checked(name, config, source)):
        count.documents += 1
        if why:
            setattr(count, why, getattr(count, why) + 1)
            continue
        prompt, target = spec.prompt(doc), (spec.target(doc) if target is None else target)
        if (prompt, target) in seen:
            count.duplicates += 1
            continue
        seen.add((prompt, target))
        count.rows += 1
        yield {"prompt": [{"role": "user", "content": prompt}],
               "completion": [{"role": "assistant", "content": target}],
               "task": name, "id": str(tasks.document_id(spec, doc, position)), "config": config,
               "split": source, "position": position}


def _message_rows(corpus, layout, checked) -> dict:
    name, conversation = planning.task_api(corpus).CONVERSATION
    spec = planning.task_api(corpus).TASKS[name]
    config, wanted = layout.sources.get(name, (None, {TRAIN: TRAIN}))

    def rows(split):
        def generate(count):
            if config is None:
                return
            groups = {}  # {cluster: ([turn doc], [its verdict])}
            for doc, why, _ in checked(name, config, wanted[split]):
                group = groups.setdefault(spec.cluster(doc), ([], []))
                group[0].append(doc)
                group[1].append(why)
            for cluster, (turns_docs, whys) in groups.items():
                count.documents += 1
                why = next(filter(None, whys), None)
                if why:
                    setattr(count, why, getattr(count, why) + 1)
                    continue
                system, turns = conversation(turns_docs)
                count.rows += 1
                yield {"messages": [{"role": "system", "content": system},
                                    *({"role": role, "content": text} for role, text in turns)],
                       "task": name, "id": str(cluster), "config": config, "split": wanted[split]}
        return generate

    return {split: rows(split) for split in wanted}


# --- the card


def card_section(made: dict) -> str:
    """The card's "Training configs" section: the configs, the rule, and the counts of this build."""
    lines = ["## Training configs", "",
             f"`{SFT}`: every training document (train split; the few-shot pool where there is no train split; a "
             "`validation` split from the validation split only where no qahub task evaluates it) of "
             "every qahub task of the corpus as a TRL conversational "
             "prompt-completion row: `prompt` is one user message holding the task's own prompt (lm-eval's "
             "`doc_to_text`), `completion` one assistant message holding its target (`doc_to_target`); `task`, "
             "`id` (the task's document id), `config`, `split` and `position` trace it back."]
    if MESSAGES in made:
        lines += ["", f"`{MESSAGES}`: each training conversation as one row of `messages` (system: the context; "
                      "the agent being trained: assistant; the other: user), for TRL's `assistant_only_loss`; its "
                      "documents below are conversations, dropped when any of their turns overlaps."]
    lines += ["", f"Decontamination: {RULE}", "", "| config | split | documents | rows | dropped (exact) | "
              "dropped (n-gram) | duplicates | evaluated documents |", "|---|---|---|---|---|---|---|---|"]
    for config, entry in made.items():
        for split, c in entry.counts.items():
            lines.append(f"| {config} | {split} | {c.documents:,} | {c.rows:,} | {c.exact:,} | {c.ngram:,} | "
                         f"{c.duplicates:,} | {entry.evaluated:,} |")
    empty = [f"`{config}/{split}`" for config, entry in made.items() for split, c in entry.counts.items() if not c.rows]
    if empty:
        lines += ["", f"Left out of the configs above, having no row (`datasets` cannot load an empty split): "
                      f"{', '.join(empty)}."]
    return "\n".join(lines) + "\n"


def yaml_counts(made: dict) -> dict:
    """``{config: {split: counts}}`` for the card's YAML (``qahub_decontamination``)."""
    return {config: {split: c.as_dict() for split, c in entry.counts.items()} for config, entry in made.items()}


