"""The cyclic garbage collector paused, for code that makes many objects at once."""

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused while many objects are made that hold no reference cycle (parsed
    files, rows): it would walk all of them again and again; reference counting still frees what is dropped."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
