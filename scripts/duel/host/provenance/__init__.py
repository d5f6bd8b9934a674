"""Record a run (its manifest: config, commit, locks, images) and rebuild it from that record."""
