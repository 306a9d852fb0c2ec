"""Source extractors. Each writes only its own `raw` tables through pipelines.warehouse.landing."""
