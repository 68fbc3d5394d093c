"""Standard output for the commands: write errors said as such (a full
device is the user's situation, not a bug), and UTF-8 for program text."""
import os
import sys

from ..errors import OutputError

class StdoutError(OutputError):
    """Standard output could not take the output (a full device)."""


class Guarded(object):
    """Standard output whose write errors (ENOSPC on ``> /dev/full``) are
    ``StdoutError``s: said as such, not taken for a bug; a closed pipe
    stays ``BrokenPipeError`` (exit 141)."""

    def __init__(self, stream):
        self._stream = stream

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise StdoutError("cannot write to standard output: %s"
                               % (e.strerror or e)) from None

    def write(self, text):
        return self._call(self._stream.write, text)

    def flush(self):
        return self._call(self._stream.flush)

    @property
    def buffer(self):
        return Guarded(self._stream.buffer)  # AttributeError where there is none

    def __getattr__(self, name):
        return getattr(self._stream, name)


def drop_stdout() -> None:
    """Standard output to /dev/null: what could not be written is dropped,
    and Python does not complain about it again at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
    except (OSError, ValueError):
        pass


class Utf8Out(object):
    """Standard output taking program text: UTF-8 whatever the locale (a
    comment or a picture may hold any character)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        enc = (getattr(self.stream, "encoding", None) or "").lower().replace("-", "")
        if enc == "utf8" or not hasattr(self.stream, "buffer"):
            self.stream.write(text)
        else:
            self.stream.flush()
            self.stream.buffer.write(text.encode("utf-8"))
            self.stream.buffer.flush()

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)
