"""Russian QA Jeopardy! ("Своя игра"): questions and answers of the Own Game quiz from db.chgk.info."""

import os
from dataclasses import dataclass

import datasets
from qahub.dataset_cards import citation

from ._jeopardy_tables import EXTENDED, TRAINING, VALIDATION, schema, tables
from ._rows import RowsBuilder
from ._sources import Source, SourceConfig, in_data_dir

_DESCRIPTION = """\
Russian QA Jeopardy!: 29,375 questions and answers of the quiz "Own Game" ("Своя игра", the Russian
Jeopardy!) collected from the database of the Internet club "What? Where? When?" (db.chgk.info), with the
question's value (its number 1-5 in the topic), topic, source, author and tournament. There is no official
split; the upstream training/validation files of questions and answers are the `qa` config, whose
`question_id` is the question's 0-based row in its file.
"""

_COMMIT = "55b6876fe647571c8ea47a7aec192dfab72b99b1"

SOURCE = Source(
    corpus="jeopardy", description=_DESCRIPTION, citation=citation("jeopardy"),
    homepage="https://github.com/evrog/Russian-QA-Jeopardy", license="other",
    base_url=f"https://raw.githubusercontent.com/evrog/Russian-QA-Jeopardy/{_COMMIT}",
    files={"extended": {"train": EXTENDED}, "qa": {"train": TRAINING, "validation": VALIDATION}},
    # Only the validation file could be checked here: the two large files are absent from the snapshot of the
    # pinned commit that was available (their git blob ids are in the card), so they are downloaded unchecked.
    sha256={VALIDATION: "c00cb469370ee62350e639a9f4435b5a58d8fe9ec3a87eaf027891f58819e9b3"},
)

@dataclass
class JeopardyConfig(SourceConfig):
    """One layout of the upstream files; ``present_splits_only``: with ``data_dir``, build the splits whose files
    are there (e.g. ``qa`` from the validation file alone) instead of failing on the absent ones."""

    present_splits_only: bool = False


class Jeopardy(RowsBuilder):
    """Russian QA Jeopardy! questions: the full table, or the upstream question/answer split files."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = JeopardyConfig
    BUILDER_CONFIGS = [
        JeopardyConfig(name="extended", version=VERSION,
                       description=f"{EXTENDED}: all questions with value, topic, source, author, tournament."),
        JeopardyConfig(name="qa", version=VERSION,
                       description=f"{TRAINING} and {VALIDATION}: question and answer only."),
    ]
    DEFAULT_CONFIG_NAME = "extended"
    SPLITS = SOURCE.splits()

    def _info(self):
        return SOURCE.info(datasets.Features.from_arrow_schema(schema(self.config.name)))

    def _split_generators(self, dl_manager):
        files = self._present(SOURCE.files[self.config.name])
        paths = SOURCE.resolve(self.config, dl_manager, files)
        return [datasets.SplitGenerator(name=split, gen_kwargs={"filepath": paths[split]}) for split in files]

    def _present(self, files):
        if not self.config.data_dir:
            return files
        root = os.path.expanduser(str(self.config.data_dir))
        present = {split: rel for split, rel in files.items() if in_data_dir(self.config, rel)}
        if not present:
            raise FileNotFoundError(f"{root}: none of {', '.join(files.values())} is there" + self._next_step())
        if not self.config.present_splits_only and len(present) < len(files):
            absent = [rel for split, rel in files.items() if split not in present]
            raise FileNotFoundError(f"{root}: {', '.join(absent)} is not there; to build only the splits whose files "
                                    f"are there ({', '.join(present)}), pass --option present_splits_only=true "
                                    "(Python: present_splits_only=True)")
        return present if self.config.present_splits_only else files

    def _next_step(self):
        """What to build instead when this config has no file in ``data_dir``: the configs that have some
        (nothing to add when the build already takes what is there)."""
        if self.config.present_splits_only:
            return ""
        others = [name for name, files in SOURCE.files.items() if name != self.config.name
                  and any(in_data_dir(self.config, rel) for rel in files.values())]
        if not others:
            return "; --data-dir must hold the upstream files, under their upstream names"
        return (f"; build {' or '.join(others)} instead: --config {others[0]}, or --option present_splits_only=true "
                "to build the configs and splits whose files are there (Python: present_splits_only=True)")

    def _generate_tables(self, filepath):
        yield from enumerate(tables(filepath, self.config.name))
