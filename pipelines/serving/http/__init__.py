"""The HTTP server of the API: app (ASGI), server (uvicorn), connections, replies and query-string parameters."""
