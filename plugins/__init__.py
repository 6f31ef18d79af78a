"""Built-in token mixers, installed as ``benchsuite.mixers`` and registered in code
(:mod:`benchsuite.registry.builtins`)."""
