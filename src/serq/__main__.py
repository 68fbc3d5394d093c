import sys

# Ctrl-C while the command line is still being imported or read (before
# main's handler is in place) ends as it does later, not in a traceback.
try:
    from .cli import main
except KeyboardInterrupt:
    sys.stderr.write("serq: interrupted\n")
    sys.exit(130)

# Guarded: `serq sweep`'s worker processes import the parent's main module.
if __name__ == "__main__":
    try:
        status = main()
    except KeyboardInterrupt:
        sys.stderr.write("serq: interrupted\n")
        status = 130
    # CPython (3.8-3.12) marks a KeyboardInterrupt raised inside exec or
    # eval of a string (a dataclass or namedtuple being made, when Ctrl-C or
    # SIGTERM lands in an import) as unhandled even once caught, and under
    # `-m` then ends the process by SIGINT instead of with this status.  An
    # exec of a string that raises nothing clears the mark.
    exec("0", {})
    sys.exit(status)
