"""pimcloud.analysis: gem5 stats.txt and guest results into tidy frames, metrics,
figures and an HTML report (see analysis/README.md)."""
