"""``python -m benchsuite.cli``: the ``benchsuite`` command."""

import sys

from benchsuite.cli import main

sys.exit(main())
