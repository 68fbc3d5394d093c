"""Public LLM-serving traces (ShareGPT, BurstGPT, Azure LLM inference 2023
and 2024, Mooncake) converted to the trace CSV serQ replays:
``serq trace convert`` (``convert.py``), the readers in ``readers.py``."""
from .convert import FORMATS, LAYOUTS, Options, Summary, convert, convert_file

__all__ = ["FORMATS", "LAYOUTS", "Options", "Summary", "convert", "convert_file"]
