"""Dataset cards, one per corpus: the README of the exported Hub folder."""

import re
from importlib import resources

_BIBTEX = re.compile(r"^## Citation\n.*?^```bibtex\n(.*?)^```", re.S | re.M)


def citation(corpus: str) -> str:
    """The BibTeX of the card's "## Citation" section: the corpus's citation is kept there once."""
    card = resources.files(__name__).joinpath(f"{corpus}.md").read_text(encoding="utf-8")
    found = _BIBTEX.search(card)
    if found is None:
        raise LookupError(f"dataset_cards/{corpus}.md: no ```bibtex block under '## Citation'")
    return found.group(1)
