"""Dataset builders: term-pair benchmarks built from terminologies and corpora."""
