"""Text -> tokens -> AST.  All sugar of serQ 0.1.3 is expanded here, so the AST
handed to the linker is the kernel language (see ``ast.py``)."""
