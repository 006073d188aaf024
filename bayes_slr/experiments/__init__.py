"""Whole measurements (one function per experiment), called by the CLI, notebooks and benchmarks."""
