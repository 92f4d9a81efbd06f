"""LIMUR: Russian reference resolution and meaning recovery from grammar (rwsd and kusdra tasks)."""

from dataclasses import dataclass
from typing import Optional

import datasets
from qahub.dataset_cards import citation

from ._limur_files import (
    CONFIGS,
    INPUT_KEYS,
    LETTERS,
    SPLIT_FILES,
    TASK_FILE,
    find_sources,
    kept_sources,
    split_rows,
)
from ._rows import RowsBuilder
from ._sources import Source, SourceConfig

_DESCRIPTION = """\
LIMUR is a Russian multiple-choice dataset testing reference resolution, syntactic ambiguity resolution and
robustness to texts with non-standard but grammatically interpretable words. Two task types: rwsd (Winograd
schema style: which candidate does the reference point to) and kusdra (answer a question about a text built
on pseudo-words, in the spirit of Shcherba's "Glokaya kuzdra"). 4 to 9 options, lettered А Б В Г Д Е Ё Ж З.
"""

SOURCE = Source(corpus="limur", description=_DESCRIPTION, citation=citation("limur"),
                homepage="https://github.com/MERA-Evaluation/MERA", license="unknown")


@dataclass
class LimurConfig(SourceConfig):
    """``task_type`` keeps only the records of one task type (None: all). LIMUR has no public download."""

    task_type: Optional[str] = None


class Limur(RowsBuilder):
    """LIMUR records in MERA's own schema (instruction, inputs, outputs, meta as MERA publishes them), with the
    derived options, prompt and label (the answer as a ClassLabel)."""

    VERSION = datasets.Version("2.0.0")  # 2.0.0: MERA's own schema (outputs and meta types as strings), label added
    BUILDER_CONFIG_CLASS = LimurConfig
    BUILDER_CONFIGS = [
        LimurConfig(name="all", version=VERSION, description="Both task types."),
        LimurConfig(name="rwsd", version=VERSION, task_type=CONFIGS["rwsd"],
                    description="Winograd-style reference resolution."),
        LimurConfig(name="kusdra", version=VERSION, task_type=CONFIGS["kusdra"],
                    description="Questions on pseudo-word texts."),
    ]
    DEFAULT_CONFIG_NAME = "all"
    # the splits a build may have: those whose files are present in data_dir
    SPLITS = {config: ["train", "validation", "test", "shots"] for config in CONFIGS}
    SPLITS_FROM_FILES = True
    # what the metric scores against: never null in an export qahub evaluate reads (a dotted name is in a struct)
    GOLD_FIELDS = ("outputs", "meta.id", "meta.task_type")

    def _info(self):
        string_value = datasets.Value("string")
        features = datasets.Features(
            {
                "instruction": string_value,
                "inputs": {key: string_value for key in INPUT_KEYS},
                "outputs": string_value,
                "meta": {
                    "id": datasets.Value("int32"),
                    "task_type": string_value,
                    "context_type": string_value,
                },
                "options": datasets.List(string_value),
                "prompt": string_value,
                "label": datasets.ClassLabel(names=LETTERS),
            }
        )
        return SOURCE.info(features)

    def _split_generators(self, dl_manager):
        if not self.config.data_dir:
            raise FileNotFoundError(
                "LIMUR has no public download: pass data_dir, a folder holding the MERA task files "
                f"({', '.join(SPLIT_FILES)}, any subset) or {TASK_FILE}"
            )
        # every record of every split is validated, whatever the config (a kept split in _generate_examples, here
        # the others)
        kept = kept_sources(find_sources(self.config.data_dir), self.config.task_type, self.config.data_dir)
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"filepath": path, "split": split})
            for split, path in kept.items()
        ]

    def _generate_examples(self, filepath, split):
        # row by row (not a list): a table's rows are freed once it is written
        yield from enumerate(split_rows(filepath, split, self.config.task_type))
