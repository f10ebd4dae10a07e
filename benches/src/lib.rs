//! Benchmarks. Not tests: they measure and print; results with their
//! commands go into `docs/benchmarks.md`.
