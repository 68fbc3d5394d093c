import sys

from .cli import main

# Guarded: `serq sweep`'s worker processes import the parent's main module.
if __name__ == "__main__":
    sys.exit(main())
