"""Training one job: the shared encoder, the training loop, measurements and probes (torch)."""
