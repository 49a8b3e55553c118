"""What each screen shows, computed once for every front end.

Each module builds a typed, immutable view model from what the service returns (`Cluster`,
its snapshots, previews, SLA report and audit log): the CLI formats it as a table, JSON or CSV,
the console renders it. No view imports a front-end library; none talks to a backend directly.
"""
