"""Executing jobs: the runner that carries a plan's jobs through the store and an executor, the
worker callable and the executors that run it (local, process, ray)."""
