"""JEMHopQA: Japanese Explainable Multi-hop Question Answering."""

import datasets
from qahub.dataset_cards import citation

from ._jemhopqa_files import FILES, TYPES, read_rows
from ._rows import RowsBuilder
from ._sources import Source, SourceConfig

_DESCRIPTION = """\
JEMHopQA (Japanese Explainable Multi-hop Question Answering) is a Japanese multi-hop QA dataset that can
evaluate internal reasoning: given a question, a system produces an answer and derivations, a set of
(subject, relation, objects) steps linking two Wikipedia articles. Questions are compositional or comparison.
"""

_COMMIT = "fed5024f4f39f02727e699cb7ccb67935a779a5a"
_BASE_URL = f"https://raw.githubusercontent.com/aiishii/JEMHopQA/{_COMMIT}"


SOURCE = Source(
    corpus="jemhopqa", description=_DESCRIPTION, citation=citation("jemhopqa"),
    homepage="https://github.com/aiishii/JEMHopQA", license="cc-by-sa-4.0",
    base_url=_BASE_URL,
    files=FILES,
    sha256={
        "corpus/train.json": "c64392b4087299bcfaa02fe2584128b5dc50fe5ea83e1bd600cadfc984669e65",
        "corpus/dev.json": "2f3b8a518ca3051fc002f343ba3c26f6f3be902464061b43c30c5a1d37a9269a",
        "corpus_ver1.1/train_ver1.1.json": "cf3f2c0d25dca2a09ecbbd0ecd64fe7c1dc7932532bf60e0620d55be51d8bf46",
        "corpus_ver1.1/dev_ver1.1.json": "839751f904f6e1eb0cdfc9b3b809f3381b6ca5fda8fdeb21bbe92eaa16ab8711",
        "corpus_ver1.2/train_ver1.2.json": "e437d41f2fdac61b3954fb9d5d83a53c623db4194dec68b1cc8c406500d9e8ae",
        "corpus_ver1.2/dev_ver1.2.json": "f7b3a5b86f7f16ef230c1b4f4307c467dbc4bd5f3eb4b8b35f8397ce06820b38",
    },
)


class Jemhopqa(RowsBuilder):
    """JEMHopQA questions, answers and derivations, one config per release."""

    VERSION = datasets.Version("1.2.0")
    BUILDER_CONFIG_CLASS = SourceConfig
    BUILDER_CONFIGS = [
        SourceConfig(name="v1.0", version=datasets.Version("1.0.0"), description="First release (corpus/)."),
        SourceConfig(name="v1.1", version=datasets.Version("1.1.0"), description="Fixes of Nov 2023 (corpus_ver1.1/)."),
        SourceConfig(name="v1.2", version=datasets.Version("1.2.0"), description="Fixes of Mar 2025 (corpus_ver1.2/)."),
    ]
    DEFAULT_CONFIG_NAME = "v1.2"
    SPLITS = SOURCE.splits()
    # what the metric scores against: never null in an export qahub evaluate reads
    GOLD_FIELDS = ("qid", "answer")

    def _info(self):
        features = datasets.Features(
            {
                "qid": datasets.Value("string"),
                "type": datasets.ClassLabel(names=TYPES),
                "question": datasets.Value("string"),
                "answer": datasets.Value("string"),
                "derivations": datasets.List(
                    {
                        "subject": datasets.Value("string"),
                        "relation": datasets.Value("string"),
                        "objects": datasets.List(datasets.Value("string")),
                    }
                ),
                "page_ids": datasets.List(datasets.Value("string")),
                "time_dependent": datasets.Value("bool"),
            }
        )
        return SOURCE.info(features)

    def _split_generators(self, dl_manager):
        paths = SOURCE.resolve(self.config, dl_manager, SOURCE.files[self.config.name])
        return [datasets.SplitGenerator(name=split, gen_kwargs={"filepath": paths[split]}) for split in paths]

    def _generate_examples(self, filepath):
        yield from enumerate(read_rows(filepath))


def to_upstream_derivations(derivations):
    """A row's derivations back in the upstream nested form ``[[subject, relation, [object, ...]], ...]``.

    Accepts the list-of-records form of this builder's rows (and, for convenience, the dict-of-lists form
    that ``Sequence`` would give).
    """
    if isinstance(derivations, dict):
        derivations = [
            {"subject": s, "relation": r, "objects": o}
            for s, r, o in zip(derivations["subject"], derivations["relation"], derivations["objects"])
        ]
    return [[step["subject"], step["relation"], list(step["objects"])] for step in derivations]
