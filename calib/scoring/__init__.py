"""Scoring: per-part counts, the per-call frame with chain breaks, and each estimator's error per call."""
