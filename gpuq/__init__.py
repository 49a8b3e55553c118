"""gpuq: a console and CLI for on-call operators of shared GPU clusters."""

__version__ = "0.1.0"
