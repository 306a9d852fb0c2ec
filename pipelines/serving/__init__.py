"""Serving: the allocation query engine, its CLI and its HTTP API over the serving copy."""
