"""The cyclic garbage collector paused, for code that makes many objects at once.

Kept once here, in the core: the loaders, the report and the training configs import it as ``qahub.gc_pause``; a
metric directory that uses it links this file (``metrics/limur/gc_pause.py -> ../../src/qahub/gc_pause.py``) and
imports it as ``.gc_pause``, so that the directory still loads without qahub (evaluate copies the linked file's
text). It imports only the standard library.
"""

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused while many objects are made that hold no reference cycle (parsed
    files, rows, a dict per example): it would walk all of them again and again; reference counting still frees
    what is dropped."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
