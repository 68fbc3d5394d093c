"""``--backend ray [--address ADDR]``: the runs on a Ray cluster.

Each task is one Ray task running the function it is given (for a sweep,
:func:`serq.sweep.run.run_task`); the workers import ``serq`` (install the
same serq on every node) and read a program's trace from the absolute path
the driver gives it (the file must be there on every node).  Without
``--address`` Ray starts a local cluster (``ray.init()``), kept from one
batch of tasks to the next and shut down at the end.  Needs the ``ray``
extra.
"""
import logging
from typing import Callable, List, Optional, Sequence

from ..errors import UsageError


def _ray():
    try:
        import ray
    except ImportError:
        raise UsageError("the ray backend needs Ray: pip install 'serq[ray]'") from None
    return ray


class RayRunner(object):
    """A connection to a cluster running ``fn`` (backends.py passes it, so
    that this module need not import what it runs)."""

    def __init__(self, address: Optional[str], fn: Callable):
        ray = _ray()
        try:
            kw = {} if address else {"include_dashboard": False}
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, **kw)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise UsageError("cannot connect to the Ray cluster at %s: %s"
                             % (address or "(a new local cluster)", str(e).splitlines()[0]
                                if str(e) else type(e).__name__)) from None
        self.ray = ray
        self.remote = ray.remote(num_cpus=1, max_retries=0)(fn)

    def run(self, tasks: Sequence, advance: Callable[[object], None], stop=None) -> List:
        """``advance(result)`` is called as each task finishes.  A signal
        (``stop``, an ``interrupt.Stop``) cancels the tasks not finished and
        raises ``interrupt.WorkStopped`` with the finished results."""
        ray = self.ray
        pending = [self.remote.remote(t) for t in tasks]
        out: List = []
        try:
            while pending:
                if stop is not None and stop.signum is not None:
                    break
                done, pending = ray.wait(pending, num_returns=1, timeout=0.2)
                for r in ray.get(done):
                    out.append(r)
                    advance(r)
        except KeyboardInterrupt:  # a second signal
            pass
        if pending:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # already finished, or gone with the cluster
                    pass
            from ..interrupt import WorkStopped
            raise WorkStopped(out, "interrupted")
        return out

    def close(self) -> None:
        self.ray.shutdown()


def run_ray(tasks: Sequence, address: Optional[str], advance: Callable[[object], None],
            run_task: Callable, stop=None) -> List:
    """The tasks on a cluster connected for them alone."""
    runner = RayRunner(address, run_task)
    try:
        return runner.run(tasks, advance, stop)
    finally:
        runner.close()
