"""The protocol's arithmetic, in one room: what n paired seeds can show (``power.py``: the
smallest sign-flip p, the seeds Holm needs, the MDE), the sign-flip tests and their inverted
intervals (``signflip.py``), one paired comparison, its verdict and Holm over a family
(``stats.py``), and the pre-registered futility look (``futility.py``). Pure numbers: the plan
sizes a design with it, the analysis applies it (docs/statistics.md, docs/protocol.md)."""
