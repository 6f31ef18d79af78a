"""Built-in tracks, registered through the ``benchsuite`` entry-point group."""
