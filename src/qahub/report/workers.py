"""The tasks of a report side by side, one worker process each (forked: the runs, the task declarations and the
imports are inherited, not sent), each worker's BLAS held to one thread so that the workers share the cores
rather than fight over them. A task's numbers are the same to the last digit with any number of workers: its
resamples are drawn from the seed alone, and its sums made by one BLAS thread here too."""

from __future__ import annotations

import os
import signal
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from .runs import ReportError

_work = None  # what each worker runs, set before the workers are forked
_limits = []


def jobs(requested: int | None, tasks: int) -> int:
    """``--jobs``, else one worker per CPU this process may use, on Linux only (forking a process that has loaded
    macOS's Accelerate or Windows' BLAS is not safe); never more than the tasks."""
    if requested is not None:
        if requested < 1:
            raise ReportError(f"--jobs {requested}: must be at least 1")
        return min(requested, max(tasks, 1))
    if sys.platform != "linux":
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), tasks))


def each(work, tasks: list, sizes: dict, workers: int, progress) -> dict:
    """``{task: work(task)}`` in the order of ``tasks``: here when ``workers`` is 1, else in that many forked
    workers, the largest tasks (``sizes``) first so that no long one is left for the end."""
    if workers <= 1:
        from threadpoolctl import threadpool_limits

        done = {}
        with threadpool_limits(limits=1):  # as in a worker: BLAS sums in the same order, the same last digits
            for task in tasks:
                done[task] = work(task)
                progress.update(1)
        return done
    global _work
    _work = work
    with warnings.catch_warnings():
        # Python 3.12+ warns on fork when BLAS threads exist; the workers run no BLAS thread they inherit
        warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
        import multiprocessing

        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_start)
        try:
            futures = {pool.submit(_run, task): task for task in sorted(tasks, key=lambda t: -sizes.get(t, 0))}
            done = {}
            for future in as_completed(futures):
                done[futures[future]] = future.result()
                progress.update(1)
        except BrokenProcessPool:
            raise ReportError("a report worker process ended without a result (out of memory?); "
                              "rerun with --jobs 1") from None
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            _work = None
    return {task: done[task] for task in tasks}


def _start():
    from threadpoolctl import threadpool_limits

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: no traceback per worker
    _limits.append(threadpool_limits(limits=1))


def _run(task):
    return _work(task)
