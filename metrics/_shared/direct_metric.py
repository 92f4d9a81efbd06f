"""What qahub's metrics share: ``compute`` without evaluate's Arrow cache when it is not needed.

This file is kept once, in ``metrics/_shared/``, and linked into each metric directory: evaluate copies a linked
helper's content when it loads a metric, as ``qahub metric-copy`` does for a Space, so each directory still loads
on its own.

evaluate's ``compute`` writes every example to an Arrow cache file and reads it back. Inputs given to ``compute``
alone (nothing added before, one process) are scored directly instead. After ``add`` / ``add_batch`` evaluate's
path runs; when ``_compute`` raises there, evaluate leaves its cache file and lock behind, so they are removed here.
``add_batch`` checks that predictions and references come in equal numbers before evaluate creates its cache file
(it would find out only after, leaving an empty file that another process of a distributed run fails to read).
"""

import abc
import contextlib
import os

import datasets
import evaluate

# the features of a metric that stores each added batch as one row of JSON text
JSON_TEXT = datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")})


class DirectMetric(evaluate.Metric, metaclass=abc.ABCMeta):
    """An evaluate metric whose ``INFO`` holds its ``evaluate.MetricInfo`` fields and whose ``_score_direct``
    scores inputs given to ``compute`` alone (abstract, so evaluate never takes it for the module's metric)."""

    INFO: dict = {}

    def _info(self):
        return evaluate.MetricInfo(**self.INFO)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the predictions against the references (given here, added before, or both)."""
        self._check_options(kwargs)
        if predictions is not None and references is not None and self.writer is None and self.num_process == 1:
            return self._score_direct(predictions, references, **kwargs)
        try:
            return super().compute(predictions=predictions, references=references, **kwargs)
        except BaseException:
            with contextlib.suppress(Exception):  # the original error is the one to report
                self._discard_cache()
            raise

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """evaluate's ``add_batch``, the numbers of predictions and references checked first."""
        check_counts(self.name, predictions, references)
        return self._storing(super().add_batch, predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """evaluate's ``add``; a failing first one leaves no cache file."""
        return self._storing(super().add, prediction=prediction, reference=reference, **kwargs)

    def _storing(self, store, **inputs):
        """``store(**inputs)``; when it fails on the first input, the cache file it created is removed (later
        failures keep the file: it holds what was added before)."""
        first = self.writer is None
        try:
            return store(**inputs)
        except BaseException:
            if first:
                with contextlib.suppress(Exception):  # the original error is the one to report
                    self._discard_cache()
            raise

    def _check_options(self, options):
        """Check ``compute``'s keyword options before evaluate reads its cache (nothing to check by default)."""

    @abc.abstractmethod
    def _score_direct(self, predictions, references, **options):
        """The result of ``predictions`` and ``references`` given to ``compute`` alone, checked here."""

    def _discard_cache(self):
        """What evaluate does after a successful compute: close the writer, delete the cache files, unlock."""
        self.data = None
        if self.writer is not None:
            self.writer.finalize()
            self.writer = None
        for path in [*(getattr(self, "file_paths", None) or []), self.cache_file_name]:
            if path and os.path.exists(path):
                os.remove(path)
        for lock in [*(getattr(self, "filelocks", None) or []), self.filelock]:
            if lock is not None:
                lock.release()
        self.file_paths = self.filelocks = self.cache_file_name = self.filelock = None


def check_counts(name, predictions, references):
    """A ValueError unless both are given, in equal numbers (evaluate stores them as pairs)."""
    if predictions is None or references is None:
        missing = "predictions" if predictions is None else "references"
        raise ValueError(f"{name}: add_batch got no {missing}; give predictions and references together")
    try:
        counts = len(predictions), len(references)
    except TypeError:  # not sized (e.g. a generator): evaluate's own checks apply
        return
    if counts[0] != counts[1]:
        raise ValueError(f"{name}: add_batch got {counts[0]} predictions and {counts[1]} references; evaluate stores "
                         "them in pairs, so add as many of each (or pass them all to compute)")
