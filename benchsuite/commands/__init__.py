"""The use-cases behind the CLI verbs other than ``run`` and ``report``: costs, compare, export,
scale (the verbs themselves, their flags and printing: :mod:`benchsuite.cli`)."""
