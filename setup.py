"""Build of serq: the simulator core compiled with mypyc where it can be.

The modules in ``CORE`` are compiled to C extensions with mypyc (one shared
library, ``serq/_core__mypyc``, and a small extension per module next to its
``.py``) when this is CPython with a C compiler and Python's headers.
Elsewhere -- PyPy, no compiler, no headers, or ``SERQ_NO_COMPILE=1`` in the
environment -- the same modules are installed as plain Python, with a
one-line notice.  ``SERQ_REQUIRE_COMPILE=1`` makes that a build error
instead (CI uses it).  At run time ``SERQ_INTERPRETED=1`` loads the ``.py``
files even where the compiled modules exist (``serq/__init__.py``);
``serq --version`` and ``serq.core()`` tell which core runs.
"""
import os
import platform
import shutil
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_ext import build_ext

#: The modules mypyc compiles (paths under src/).
CORE = [
    "serq/sim/arith.py",
    "serq/sim/rng.py",
    "serq/sim/samples.py",
    "serq/sim/etree.py",
    "serq/sim/etree_choose.py",
    "serq/sim/rng_chacha.py",
    "serq/sim/rng_seed.py",
    "serq/sim/rng_batch.py",
    "serq/sim/dist.py",
    "serq/sim/xdist.py",
    "serq/sim/recorded.py",
    "serq/sim/fifoq.py",
    "serq/sim/events.py",
    "serq/sim/stages.py",
    "serq/sim/step.py",
    "serq/sim/step_body.py",
    "serq/sim/step_plan.py",
    "serq/sim/step_reads.py",
    "serq/sim/pools.py",
    "serq/sim/holds.py",
    "serq/sim/session.py",
    "serq/sim/postmortem.py",
    "serq/sim/fold.py",
    "serq/sim/clock.py",
    "serq/sim/timeavg.py",
    "serq/sim/poolsim.py",
    "serq/sim/settle.py",
    "serq/sim/engine.py",
    "serq/report/stats.py",
    "serq/report/replay.py",
]


def notice(why):
    sys.stderr.write("serq: building the interpreted core (%s)\n" % why)


def required():
    return os.environ.get("SERQ_REQUIRE_COMPILE", "") not in ("", "0")


def why_not_compiled():
    """Why the core cannot be compiled here, or None."""
    if os.environ.get("SERQ_NO_COMPILE", "") not in ("", "0"):
        return "SERQ_NO_COMPILE is set"
    if platform.python_implementation() != "CPython":
        return "mypyc needs CPython, this is %s" % platform.python_implementation()
    include = sysconfig.get_paths().get("include")
    if not include or not os.path.exists(os.path.join(include, "Python.h")):
        return "no Python headers (Python.h)"
    try:
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler
        cc = new_compiler()
        customize_compiler(cc)
        exe = getattr(cc, "compiler_so", None) or getattr(cc, "compiler", None)
        if exe and not (os.path.isabs(exe[0]) and os.path.exists(exe[0])) \
                and shutil.which(exe[0]) is None:
            return "no C compiler (%s)" % exe[0]
    except Exception as e:  # (a platform distutils does not know)
        return "no C compiler (%s)" % e
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return "mypyc is not installed"
    return None


class OptionalBuildExt(build_ext):
    """``build_ext`` that falls back to the interpreted core when the C
    build fails: the extensions built so far are removed, so that no module
    is left compiled without the shared library it needs."""

    def run(self):
        try:
            build_ext.run(self)
        except Exception as e:
            if required():
                raise
            for path in self.get_outputs() + self._inplace_outputs():
                if os.path.exists(path):
                    os.remove(path)
            notice("the C build failed: %s" % (str(e).splitlines() or [type(e).__name__])[0])

    def _inplace_outputs(self):
        out = []
        for ext in self.extensions:
            name = self.get_ext_filename(self.get_ext_fullname(ext.name))
            out.append(os.path.join("src", name))
        return out


def ext_modules():
    why = why_not_compiled()
    if why is not None:
        if required():
            raise SystemExit("serq: SERQ_REQUIRE_COMPILE is set, but %s" % why)
        notice(why)
        return []
    from mypyc.build import mypycify
    return mypycify(["--config-file", "pyproject.toml"] + ["src/" + p for p in CORE],
                    opt_level=os.environ.get("SERQ_MYPYC_OPT", "3"), group_name="serq._core",
                    target_dir="build/mypyc")


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
