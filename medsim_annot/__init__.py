"""medsim-annot: doctors verify medical term-similarity datasets; builders audit them."""

__version__ = "0.1.0"
