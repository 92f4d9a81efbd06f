"""Correctness of a Russian Jeopardy! answer as in the official ``evaluate_QA_system.ipynb``.

Both answers are tokenized as spaCy's Russian tokenizer does (punctuation tokens dropped), lemmatized with
pymorphy3 and compared with NLTK's ``meteor_score``; an answer is correct when METEOR > 0.227743. Everything
runs offline: NLTK's WordNet is replaced by a stand-in with no synsets and no punkt model is needed.

Lemmas, stems and pair scores are cached per process, so repeated answers cost one dictionary lookup.
"""

from .spacy_like import TOKENIZERS, tokenizer_for

THRESHOLD = 0.227743
_CACHED_LENGTH = 300  # texts up to this many characters keep their lemmas in the cache
_CACHED_WORDS = 40  # pairs whose prediction has up to this many tokens keep their METEOR in the cache
ORDERS = ("official", "standard")

PREPROCESSING = (
    "tokens: {tokenizer}, tokens that are all punctuation dropped (as spaCy's is_punct), no punkt; "
    "lemmas: pymorphy3 {version} normal form of the first dictionary parse, lowercased word when pymorphy3 "
    "does not know it; METEOR: nltk {nltk} meteor_score with PorterStemmer and a WordNet stand-in with no synsets"
)


class NoSynsets:
    """WordNet stand-in: no word has synonyms (Russian words have none in NLTK's English WordNet)."""

    def synsets(self, *args, **kwargs):
        return []


class RussianMeteor:
    """Preprocessing and METEOR for answer pairs, with per-process caches."""

    def __init__(self, tokenizer="auto"):
        import nltk
        import pymorphy3
        from nltk.stem.porter import PorterStemmer
        from nltk.translate.meteor_score import meteor_score

        self._meteor_score = meteor_score
        self._morph = pymorphy3.MorphAnalyzer()
        self._dictionary = self._morph.dictionary
        self._stemmer = _CachedStemmer(PorterStemmer())
        self._wordnet = NoSynsets()
        self.tokenize, self.tokenizer = tokenizer_for(tokenizer)
        self._lemmas = {}
        self._texts = {}
        self._pairs = {}
        self.description = PREPROCESSING.format(
            tokenizer=self.tokenizer, version=pymorphy3.__version__, nltk=nltk.__version__)

    def lemma(self, word):
        key = word.lower()
        lemma = self._lemmas.get(key)
        if lemma is None:
            lemma = self._lemmas[key] = self._lemmatize(key)
        return lemma

    def _lemmatize(self, word):
        # Same result as the first known parse of morph.parse(word), faster: for a lowercase word all known
        # parses come from the dictionary, and when their normal forms agree their ranking does not matter.
        entries = self._dictionary.words.similar_items(word, self._morph.char_substitutes)
        if not entries:
            return word
        forms = {self._dictionary.build_normal_form(para, idx, fixed) for fixed, parses in entries for para, idx in parses}
        if len(forms) == 1:
            return forms.pop()
        for parse in self._morph.parse(word):
            if parse.is_known:
                return parse.normal_form
        return word

    def preprocess(self, text):
        """Lemmas of ``text``: a tuple of strings (empty when it has no word)."""
        lemmas = self._texts.get(text)
        if lemmas is None:
            lemmas = tuple(self.lemma(word) for word in self.tokenize(text))
            if len(text) <= _CACHED_LENGTH:  # a model's long rambling is not worth keeping
                self._texts[text] = lemmas
        return lemmas

    def score(self, prediction, gold, order="official"):
        """METEOR of one pair. ``official``: ``meteor_score([prediction], gold)`` as the notebook calls it
        (the prediction is NLTK's reference, the gold answer its hypothesis); ``standard``: the reverse."""
        pred, ref = self.preprocess(prediction), self.preprocess(gold)
        reference, hypothesis = (pred, ref) if order == "official" else (ref, pred)
        key = (reference, hypothesis)
        value = self._pairs.get(key)
        if value is None:
            value = self._meteor_score([reference], hypothesis, stemmer=self._stemmer, wordnet=self._wordnet)
            if len(pred) <= _CACHED_WORDS:
                self._pairs[key] = value
        return value


class _CachedStemmer:
    """NLTK's PorterStemmer with its results remembered."""

    def __init__(self, stemmer):
        self._stemmer = stemmer
        self._cache = {}

    def stem(self, word):
        stem = self._cache.get(word)
        if stem is None:
            stem = self._cache[word] = self._stemmer.stem(word)
        return stem


_SHARED = {}


def shared(tokenizer="auto"):
    """The process-wide scorer for ``tokenizer`` (its caches survive between ``compute`` calls)."""
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {tokenizer!r}")
    if tokenizer not in _SHARED:
        _SHARED[tokenizer] = RussianMeteor(tokenizer)
    return _SHARED[tokenizer]
