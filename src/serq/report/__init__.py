"""The report: statistics, the report rows, JSON and text output, and --dump."""
