"""Files written whole or not at all.

Every file serq writes (``serq fmt`` in place, every ``-o``/``--output``,
``--dump``, ``--trace-iterations``, figures, sweep tables, traces, cost
libraries) goes through this module: the text goes to a temporary file in
the target's folder (``.NAME.XXXXXX.tmp``), which is flushed to the disk and
renamed over the target only once it is complete.  A failure on the way (a
full disk, Ctrl-C) removes the temporary file and leaves the target as it
was; the error is an ``OutputError`` naming the file and saying so.

Details:

* the new file gets the old one's permission bits (and owner and group,
  where the process may set them); a new file gets ``0666`` less the umask,
  as ``open`` would give it;
* a symbolic link is followed: the file it points to is replaced, the link
  stays;
* a target that exists and is not a regular file (``/dev/null``,
  ``/dev/full``, a FIFO) is written directly, as there is nothing to
  replace: an error writing it (``ENOSPC`` on ``/dev/full``) is still an
  ``OutputError``;
* a target that is a folder is refused before anything is written.

Replacing a file gives it a new inode: other hard links to the old file
keep the old text.
"""
import os
import stat
import tempfile
from typing import IO, Callable, Optional

from .errors import OutputError


def _strerror(e: BaseException) -> str:
    return getattr(e, "strerror", None) or str(e) or type(e).__name__


def output_error(path: str, e: BaseException, existed: bool) -> OutputError:
    """The error for a failed write of ``path``."""
    text = "cannot write %s: %s" % (path, _strerror(e))
    if existed:
        text += "; %s is left as it was" % path
    return OutputError(text)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class AtomicFile(object):
    """A file being written: ``.file`` takes the text, ``commit()`` puts it
    in place, ``discard()`` drops it (the target left as it was).  Opening
    raises ``OutputError`` (a folder that is not there, a target that is a
    folder)."""

    def __init__(self, path: str, mode: str = "w", encoding: Optional[str] = None,
                 newline: Optional[str] = None):
        self.path = path
        self.done = False
        self.tmp: Optional[str] = None
        if "b" not in mode and encoding is None:
            encoding = "utf-8"
        target = os.path.realpath(path) if os.path.islink(path) else path
        self.target = target
        try:
            st: Optional[os.stat_result] = os.stat(target)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise output_error(path, e, False) from None
        self.old = st
        # Whether a failure leaves an old file as it was (not so for a
        # device or a FIFO, written directly).
        self.kept = st is not None and stat.S_ISREG(st.st_mode)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OutputError("cannot write %s: it is a folder; name a file" % path)
        kw = {} if "b" in mode else {"encoding": encoding, "newline": newline}
        if st is not None and not stat.S_ISREG(st.st_mode):
            # A device or a FIFO: written in place, nothing to replace.
            try:
                self.file: IO = open(target, mode, **kw)
            except OSError as e:
                raise output_error(path, e, False) from None
            return
        folder = os.path.dirname(target) or "."
        try:
            fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".",
                                            suffix=".tmp", dir=folder)
        except OSError as e:
            raise output_error(path, e, st is not None) from None
        try:
            self.file = os.fdopen(fd, mode, **kw)
        except BaseException:
            os.close(fd)
            self._remove()
            raise

    def _remove(self) -> None:
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None

    def commit(self) -> None:
        """Flush, sync and rename over the target (``OutputError`` on
        failure, the target left as it was)."""
        if self.done:
            return
        self.done = True
        try:
            self.file.flush()
            if self.tmp is not None:
                os.fsync(self.file.fileno())
            self.file.close()
            if self.tmp is None:
                return
            if self.old is not None:
                os.chmod(self.tmp, stat.S_IMODE(self.old.st_mode))
                try:
                    os.chown(self.tmp, self.old.st_uid, self.old.st_gid)
                except OSError:
                    pass  # another owner's file: ours now, with its permissions
            else:
                os.chmod(self.tmp, 0o666 & ~_umask())
            os.replace(self.tmp, self.target)
            self.tmp = None
        except BaseException as e:
            self._close_quietly()
            self._remove()
            if isinstance(e, OSError):
                raise output_error(self.path, e, self.kept) from None
            raise

    def _close_quietly(self) -> None:
        try:
            self.file.close()
        except (OSError, ValueError):
            pass

    def discard(self) -> None:
        """Drop what was written; the target is left as it was."""
        if self.done:
            return
        self.done = True
        self._close_quietly()
        self._remove()

    def __enter__(self) -> IO:
        return self.file

    def __exit__(self, kind, value, tb) -> bool:
        if kind is None:
            self.commit()
            return False
        self.discard()
        if isinstance(value, OSError) and not isinstance(value, OutputError):
            raise output_error(self.path, value, self.kept) from None
        return False


def replacing(path: str, mode: str = "w", encoding: Optional[str] = None,
              newline: Optional[str] = None) -> AtomicFile:
    """``with replacing(path) as f: f.write(...)``: the file is replaced
    when the block ends without an error, else left as it was."""
    return AtomicFile(path, mode, encoding, newline)


def write_text(path: str, text: str, encoding: str = "utf-8", newline: Optional[str] = "") -> None:
    """Replace ``path`` with ``text`` (``newline=""``: written as given)."""
    with replacing(path, "w", encoding, newline) as f:
        f.write(text)


def write_bytes(path: str, data: bytes) -> None:
    with replacing(path, "wb") as f:
        f.write(data)


def write_with(path: str, writer: Callable[[IO], None], binary: bool = True) -> None:
    """Replace ``path`` with what ``writer(file)`` writes to the open file
    (a library writing to a file object, as pyarrow does)."""
    with replacing(path, "wb" if binary else "w") as f:
        writer(f)
