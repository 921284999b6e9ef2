"""The package's version, spelled once (the CLI, the tape exporter's resource and the docs read it here)."""

__version__ = "0.1.0"
