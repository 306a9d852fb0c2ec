"""The DuckDB warehouse: connections, the raw landing schema and partition-replacing writes."""
