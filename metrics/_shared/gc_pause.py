"""The cyclic garbage collector paused, for code that makes many objects at once.

Kept once here and linked into the metric directories that use it (as ``direct_metric.py`` is); the installed
package's loaders and report import it as ``qahub.metrics._shared.gc_pause``.
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
