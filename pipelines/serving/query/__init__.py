"""What answers a request, without HTTP: the allocation, asset and recommendation queries, their parts, and the
serving snapshots they read (shared by the API, `kubeledger allocation`/`recommend` and the report)."""
