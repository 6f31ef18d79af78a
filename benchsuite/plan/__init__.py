"""Planning: from run settings to a :class:`~benchsuite.plan.plan.Plan` of jobs (no torch)."""
