"""Where a run's side lines go (``serq run --trace-iterations``,
``serq.run(..., trace_iterations=...)``): a file replaced when the run
ends (``atomic.AtomicFile``) or a stream.  A write that fails (a full disk)
stops the writing, not the run: ``finish`` then gives the error, and the
file is left as it was."""


class LineSink(object):
    """``LineSink(AtomicFile(path), None)`` or ``LineSink(None, stream,
    label)`` (``label`` names the stream in an error); ``line(text)`` during
    the run, then ``finish(failures)`` (or ``discard()`` for a run that
    ended in an exception)."""

    def __init__(self, file, stream, label: str = "standard error"):
        self.file = file
        self.stream = stream if file is None else file.file
        self.label = label
        self.error = None

    def line(self, text: str) -> None:
        if self.error is None:
            try:
                self.stream.write(text + "\n")
            except OSError as e:
                self.error = e

    def discard(self) -> None:
        if self.file is not None:
            self.file.discard()

    def finish(self, failures: list) -> None:
        """Commit the file; an error (the write's or the commit's, an
        ``OutputError``) is appended to ``failures``."""
        from .errors import OutputError
        if self.error is not None:
            self.discard()
            if self.file is None:
                failures.append(OutputError("cannot write the iteration trace to %s: %s"
                                            % (self.label, self.error.strerror or self.error)))
            else:
                from .atomic import output_error
                failures.append(output_error(self.file.path, self.error, self.file.kept))
        elif self.file is not None:
            try:
                self.file.commit()
            except OutputError as e:
                failures.append(e)
