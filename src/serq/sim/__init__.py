"""The simulator: random streams, distributions, events and the interpreter."""
