"""The test suite as a package: ``tests.*`` imports (the harnesses the benchmarks share)
must resolve to this folder even when an installed distribution ships a top-level
``tests`` package of its own (ppi-python does), which would otherwise shadow it."""
