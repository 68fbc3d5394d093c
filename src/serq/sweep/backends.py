"""Where batches of runs run: in this process, in a pool of processes, or on
a Ray cluster (``ray_backend.py``), the same workers kept from one batch to
the next (``serq sweep`` runs one batch; ``serq capacity`` one per look at a
probe, and starting a pool or a cluster for each would cost more than the
runs).

A task is ``(index, seed, payload)``; the function ``fn`` running it (a
module-level function, so that it pickles to a worker by name) returns
``(index, seed, value)`` with ``value`` None for a run stopped by a signal
(dropped, never tabulated).  ``fn(task, on_start)`` in this process gets the
``interrupt.Stop``'s ``attach`` as ``on_start``.

A signal (``stop``, an ``interrupt.Stop``) stops the launching and ends the
running runs, which are dropped: ``Runner.run`` raises
``interrupt.WorkStopped`` with the results that finished.
"""
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Callable, List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..interrupt import WorkStopped as Stopped

Task = Tuple[int, int, object]    # (index, seed, payload)
Result = Tuple[int, int, object]  # (index, seed, value, error text, or None: stopped)


def run_here(tasks: Sequence[Task], stop, done: Callable[[Result], None],
             fn: Callable) -> List[Result]:
    """The tasks one after the other in this process; a signal stops the
    run it lands in (that run is dropped) and launches no other."""
    out: List[Result] = []
    try:
        for t in tasks:
            if stop.signum is not None:
                break
            try:
                r = fn(t, stop.attach)
            finally:
                stop.detach()
            if r[2] is None:  # stopped by the signal: dropped
                break
            out.append(r)
            done(r)
    except KeyboardInterrupt:  # a second signal
        pass
    if len(out) < len(tasks):
        raise Stopped(out, "interrupted")
    return out


def _ignore_sigint() -> None:
    import signal
    import sys
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ..depth import DEEP_LIMIT, lifts_limit
    if lifts_limit():
        # a task's program is unpickled here, as deep as its expressions (depth.py)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_LIMIT))


def _workers(ex) -> List:
    return list((getattr(ex, "_processes", None) or {}).values())


def _stop_workers(ex, workers: List) -> None:
    """End the pool now, its running tasks dropped: SIGTERM, then SIGKILL
    to a worker still there after 5 s; every worker is waited for."""
    import time
    manager = getattr(ex, "_executor_manager_thread", None)  # (shutdown forgets it)
    ex.shutdown(wait=False, cancel_futures=True)
    for w in workers:
        try:
            w.terminate()
        except (OSError, ValueError, AttributeError):
            pass
    deadline = time.monotonic() + 5.0
    for w in workers:
        try:
            w.join(max(0.0, deadline - time.monotonic()))
            if w.is_alive():
                w.kill()
                w.join(5.0)
        except (OSError, ValueError, AttributeError, AssertionError):
            pass
    # The pool's manager thread sees its workers gone and closes the call
    # queue's pipe; waited for here, so that it is done before the queue's
    # finalizers (_stop_helpers) close the same pipe from the feeder thread.
    # Run side by side, the two close one descriptor twice ("Exception in
    # thread ...: OSError: [Errno 9] Bad file descriptor" on stderr).
    if manager is not None:
        try:
            manager.join(5.0)
        except RuntimeError:  # never started
            pass


def _stop_helpers() -> None:
    """The fork server and the resource tracker end with this process
    anyway (their pipes close); stopped and waited for now, so that nothing
    of the run outlives it, not even as a zombie for init to reap."""
    from multiprocessing import forkserver, resource_tracker, util
    # First the pool's own finalizers, as at exit: its named semaphores are
    # unlinked (and unregistered) while the resource tracker still listens.
    # Stopped first, the tracker unlinks them as leaked, and the finalizers
    # at exit meet names already gone (multiprocessing's "Exception ignored
    # ... sem_unlink" tracebacks on stderr, bench/fuzz.py's cli-signal 184).
    run_finalizers = getattr(util, "_run_finalizers", None)
    if run_finalizers is not None:
        try:
            run_finalizers(0)
        except Exception:  # (a private API, as below)
            pass
    for helper in (getattr(forkserver, "_forkserver", None),
                   getattr(resource_tracker, "_resource_tracker", None)):
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            try:
                stop()
            except Exception:  # a private API: at worst it ends with this process
                pass


class LocalPool(object):
    """``jobs`` worker processes, started at the first batch and kept for
    the next ones; at most ``2 * jobs`` tasks handed out at once."""

    def __init__(self, jobs: int, fn: Callable):
        self.jobs = jobs
        self.fn = fn
        self.ex: Optional[ProcessPoolExecutor] = None

    def _executor(self) -> ProcessPoolExecutor:
        if self.ex is None:
            import multiprocessing
            # Not fork: a progress display's thread may be running (forking a
            # process with threads can deadlock the child); a fork server
            # starts clean.
            methods = multiprocessing.get_all_start_methods()
            method = "forkserver" if "forkserver" in methods else "spawn"
            self.ex = ProcessPoolExecutor(max_workers=self.jobs,
                                          mp_context=multiprocessing.get_context(method),
                                          initializer=_ignore_sigint)
        return self.ex

    def run(self, tasks: Sequence[Task], stop, done: Callable[[Result], None]) -> List[Result]:
        """A signal stops the launching and ends the workers (their runs
        dropped); the finished results are kept (``WorkStopped``)."""
        from concurrent.futures.process import BrokenProcessPool
        ex = self._executor()
        jobs = self.jobs
        out: List[Result] = []
        reason = None
        queue = list(reversed(tasks))
        pending: set = set()
        try:
            while queue or pending:
                while queue and len(pending) < 2 * jobs and stop.signum is None:
                    pending.add(ex.submit(self.fn, queue.pop()))
                if stop.signum is not None:
                    reason = "interrupted"
                    break
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in finished:
                    r = f.result()
                    out.append(r)
                    done(r)
        except KeyboardInterrupt:  # a second signal
            reason = "interrupted"
        except (BrokenProcessPool, EOFError, ConnectionError):
            # A worker died: killed by the same signal as this process (its
            # handler may not have run yet), or by something else (the OOM killer).
            # (EOFError, ConnectionError: the fork server died so while a
            # worker was being started, as a SIGTERM to the group does.)
            import time
            time.sleep(0.2)
            reason = "interrupted" if stop.signum is not None else \
                "a worker process died (killed by a signal, or out of memory)"
        except BaseException:
            self.ex = None
            _stop_workers(ex, _workers(ex))
            raise
        finally:
            if reason is not None:
                # Results that came in while stopping are kept too.
                for f in pending:
                    if f.done() and not f.cancelled() and f.exception() is None:
                        out.append(f.result())
                        done(f.result())
                self.ex = None
                _stop_workers(ex, _workers(ex))
                _stop_helpers()
        if reason is not None:
            raise Stopped(out, reason)
        return out

    def close(self) -> None:
        if self.ex is not None:
            self.ex.shutdown()
            self.ex = None


class Runner(object):
    """Batches of tasks run by ``fn`` on a backend: ``local`` (``jobs``
    processes, default one per core; one job, or a batch of one task, in
    this process) or ``ray`` (the cluster at ``address``, or a local one).
    ``with Runner(...) as r: r.run(tasks, stop, done)``; ``done(result)`` is
    called as each run finishes."""

    def __init__(self, fn: Callable, jobs: Optional[int] = None, backend: str = "local",
                 address: Optional[str] = None):
        if backend not in ("local", "ray"):
            raise UsageError("unknown backend `%s`: local or ray" % backend)
        self.fn = fn
        self.backend = backend
        self.address = address
        self.jobs = jobs or os.cpu_count() or 1
        self.pool: Optional[LocalPool] = None
        self.ray = None

    def run(self, tasks: Sequence[Task], stop, done: Callable[[Result], None]) -> List[Result]:
        if not tasks:
            return []
        if self.backend == "ray":
            if self.ray is None:
                from .ray_backend import RayRunner
                self.ray = RayRunner(self.address, self.fn)
            return self.ray.run(tasks, done, stop)
        if self.jobs == 1 or len(tasks) == 1:
            return run_here(tasks, stop, done, self.fn)
        if self.pool is None:
            self.pool = LocalPool(self.jobs, self.fn)
        return self.pool.run(tasks, stop, done)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self.ray is not None:
            self.ray.close()
            self.ray = None

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False
