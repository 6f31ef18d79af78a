"""The two stages of a job: a sweep job is scored on validation, an evaluation job on test too."""

SWEEP, EVAL = "sweep", "eval"
