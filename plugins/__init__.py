"""Built-in token mixers, registered through the ``benchsuite`` entry-point group."""
