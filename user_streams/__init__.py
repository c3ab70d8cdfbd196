"""Streams declared by users of the platform (not part of it): each module lists its STREAMS.

The platform loads the modules named in ``PLATFORM_STREAM_MODULES`` (comma-separated; default
``user_streams.running_count``) into Dagster: a job, an asset with its lineage and a place in the
all_streams job for every declared stream, with no edit to ``platform_pipelines``.
"""
