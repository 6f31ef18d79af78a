"""Results: the store, the paired statistics, the across-track aggregate and the analysis."""
