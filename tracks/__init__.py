"""Built-in tracks, installed as ``benchsuite.tracks`` and registered in code
(:mod:`benchsuite.registry.builtins`)."""
