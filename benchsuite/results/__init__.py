"""Results: the paired statistics, the across-track aggregate and the analysis of a stored run."""
