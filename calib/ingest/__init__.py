"""Ingest: walk the given paths, pick an importer for each source, parse in parallel, write in batches.

Nothing is imported here: `calib ingest` with nothing to do reads only `calib.ingest.cache` (standard
library) and must not pay for the pipeline's imports. The pipeline is `calib.ingest.pipeline.ingest`.
"""
