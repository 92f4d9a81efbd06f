"""Dataset cards, one per corpus: the README of the exported Hub folder."""
