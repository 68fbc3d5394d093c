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
    sys.exit(status)
