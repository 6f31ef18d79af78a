"""The store: one SQLite file per output folder holding every finished job's record, every run's
plan and the leases that let runs sharing a folder train each job once (``store.py``,
``leases.py``), and the migration of stores kept by older versions (``legacy.py``)."""
