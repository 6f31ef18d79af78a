"""The use-cases behind the CLI verbs other than ``run`` and ``report``: costs, compare, export."""
