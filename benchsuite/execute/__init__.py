"""Executing jobs: the worker callable and the executors that run it (local, process, ray)."""
