"""Beam pipelines, the lake, and the ``pitwatch`` command line: all I/O lives here."""

__version__ = "0.1.0"
