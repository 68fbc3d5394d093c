"""Reading an input file (a program, a library, a trace, IR) with a bound.

``read_bytes`` reads at most ``limit`` bytes and refuses what is not a file
of data before reading anything: a directory, a device (``/dev/zero`` would
never end, ``/dev/full`` neither), a socket.  A pipe or FIFO is read (a
shell's ``<(…)`` is one), but never waited for: it is opened without
blocking, so a FIFO that no program writes to reads as empty instead of
hanging, and past ``limit`` bytes the read stops.

Every failure is an ``InputFileError`` whose message says what is wrong
with the path; the caller turns it into its own located error.
"""
import os
import stat


class InputFileError(Exception):
    """Why a path cannot be read: ``reason`` reads after "cannot read PATH: "."""

    def __init__(self, reason: str, too_big: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.too_big = too_big


def describe_limit(limit: int) -> str:
    """``8 MiB``, ``512 MiB``, ``2 GiB``: a limit as the errors say it."""
    if limit >= 1 << 30 and limit % (1 << 30) == 0:
        return "%d GiB" % (limit >> 30)
    if limit >= 1 << 20:
        return "%d MiB" % (limit >> 20)
    return "%d bytes" % limit


def read_bytes(path: str, limit: int) -> bytes:
    """The file's bytes, at most ``limit`` of them (``InputFileError``
    beyond, or for a path that is not a readable file of data)."""
    if "\0" in path:
        raise InputFileError("the path holds a NUL byte (\\0), which no file name can")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise InputFileError(e.strerror or str(e)) from None
    except ValueError as e:  # a path the OS cannot take at all
        raise InputFileError(str(e)) from None
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise InputFileError("it is a directory, not a file")
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            raise InputFileError("it is a device, not a file (reading it would not end)")
        if stat.S_ISSOCK(mode):
            raise InputFileError("it is a socket, not a file")
        if stat.S_ISREG(mode) and st.st_size > limit:
            raise InputFileError("it is %d bytes, more than the %s serq reads"
                                 % (st.st_size, describe_limit(limit)), too_big=True)
        if stat.S_ISFIFO(mode) and hasattr(os, "set_blocking"):
            # opened without waiting for a writer; now read what comes
            os.set_blocking(fd, True)
        chunks = []
        got = 0
        while got <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            except BlockingIOError:
                break
            except OSError as e:
                raise InputFileError(e.strerror or str(e)) from None
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise InputFileError("it holds more than the %s serq reads" % describe_limit(limit),
                                 too_big=True)
        return b"".join(chunks)
    finally:
        os.close(fd)
