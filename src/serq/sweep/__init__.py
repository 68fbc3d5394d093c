"""`serq sweep`: a grid of constants x seeds, run in parallel, summarized as a tidy table."""
