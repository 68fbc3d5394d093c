"""The progress bar of one run (``serq run`` on a terminal, ``serq.run(...,
progress=True)``): simulated time against the horizon, drawn with rich,
shown only once the run has taken a second (a quick run shows nothing) and
cleared when it ends.  rich is imported only when the bar is first drawn."""


class RunProgress(object):
    """``progress(now, horizon)`` for ``runner.simulate``; ``close()`` at
    the end of the run."""

    def __init__(self, delay: float = 1.0):
        import time
        self.clock = time.monotonic
        self.start = self.clock()
        self.delay = delay
        self.bar = None
        self.task = None

    def __call__(self, now, horizon):
        if self.bar is None:
            if self.clock() - self.start < self.delay:
                return
            from rich.progress import Progress
            self.bar = Progress(transient=True)
            self.bar.start()
            self.task = self.bar.add_task("simulating", total=horizon)
        self.bar.update(self.task, completed=now)

    def close(self):
        if self.bar is not None:
            self.bar.stop()
