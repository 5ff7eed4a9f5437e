"""fabricprobe's version: one place, read by the package metadata, provenance and every file written."""

__version__ = "0.1.0"
