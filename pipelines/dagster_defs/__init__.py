"""Dagster wiring: partitions, resources, assets, checks, jobs and schedules. Definitions live in pipelines.definitions."""
