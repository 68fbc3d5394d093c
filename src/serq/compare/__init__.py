"""`serq compare` and `serq sensitivity`: differences and elasticities from
paired runs on common random numbers (seed s for every variant)."""
