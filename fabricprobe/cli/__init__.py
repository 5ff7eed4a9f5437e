"""The fabricprobe command line."""
