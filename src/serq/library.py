"""Where ``use "PATH";`` finds its library: the search path.

serQ 0.1.3 reads ``PATH`` relative to the folder of the file that holds the
``use``.  serq keeps that rule first, so a program 0.1.3 compiles reads the
same files, and looks further only where 0.1.3 would have failed:

1. the folder of the file that holds the ``use`` (0.1.3's rule; a program
   given as text has none);
2. each folder of the ``SERQ_PATH`` environment variable, in order
   (separated by ``os.pathsep``: ``:`` on Unix, ``;`` on Windows; relative
   folders are taken from the current directory);
3. the libraries installed with serq (``serq/lib`` in the package:
   ``vllm.sq``, ``costs/llama-3.1-8b-h100-sxm.sq``); a path written into a
   checkout's ``lib`` folder (``lib/vllm.sq``, ``../lib/vllm.sq``: only
   ``..`` parts before ``lib/``) is looked up there without that prefix,
   so a copied example finds the installed library.

The first candidate that exists is read.  An absolute ``PATH`` is only
itself.  When none exists, the error lists every place looked.
"""
import os
from typing import List, Optional, Tuple

#: The folder of the installed libraries.
INSTALLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")

#: Where each candidate comes from, as the error notes name it.
PROGRAM_FOLDER = "the program's folder"
SERQ_PATH = "SERQ_PATH"
INSTALLED_LIBRARY = "serq's installed libraries"


def search_folders(environ: Optional[dict] = None) -> List[str]:
    """The folders of ``SERQ_PATH`` (empty entries skipped)."""
    env = os.environ if environ is None else environ
    raw = env.get("SERQ_PATH", "")
    return [d for d in raw.split(os.pathsep) if d]


def _under_lib(name: str) -> Optional[str]:
    """What follows ``lib/`` in a path of the form ``(../)*lib/REST``."""
    parts = name.replace("\\", "/").split("/")
    i = 0
    while i < len(parts) and parts[i] == "..":
        i += 1
    if i < len(parts) - 1 and parts[i] == "lib" and all(p not in ("", ".", "..") for p in parts[i + 1:]):
        return "/".join(parts[i + 1:])
    return None


def candidates(name: str, base: Optional[str],
               environ: Optional[dict] = None) -> List[Tuple[str, str]]:
    """Every path ``use "name"`` may read, in order, each with where it comes
    from.  ``base`` is the folder of the file holding the ``use`` (``None``
    for a program given as text); the first candidate is then 0.1.3's path,
    spelled as 0.1.3 spells it (``os.path.normpath(os.path.join(base, name))``)."""
    out: List[Tuple[str, str]] = []
    if base is not None:
        out.append((os.path.normpath(os.path.join(base, name)), PROGRAM_FOLDER))
    if not os.path.isabs(name):
        for folder in search_folders(environ):
            out.append((os.path.normpath(os.path.join(folder, name)), SERQ_PATH))
        rest = _under_lib(name)
        out.append((os.path.normpath(os.path.join(INSTALLED, name if rest is None else rest)),
                    INSTALLED_LIBRARY))
    elif base is None:
        out.append((os.path.normpath(name), PROGRAM_FOLDER))
    seen = set()
    unique = []
    for path, where in out:
        if path not in seen:
            seen.add(path)
            unique.append((path, where))
    return unique


def resolve(name: str, base: Optional[str],
            environ: Optional[dict] = None) -> Tuple[Optional[str], List[Tuple[str, str]]]:
    """The path ``use "name"`` reads (the first candidate that exists), or
    ``None``; and the candidates looked at, for an error."""
    looked = candidates(name, base, environ)
    for path, _ in looked:
        if os.path.exists(path):
            return path, looked
    return None, looked


def installed_libraries() -> List[str]:
    """The installed libraries, as a ``use`` names them (``vllm.sq``,
    ``costs/….sq``), sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(INSTALLED):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
        for f in filenames:
            if f.endswith(".sq"):
                rel = os.path.relpath(os.path.join(dirpath, f), INSTALLED)
                out.append(rel.replace(os.sep, "/"))
    return sorted(out)
