"""The operator console (Textual): `gpuq tui`, or plain `gpuq` on a terminal.

Layers as in the CLI: the console renders the views (`gpuq.views`) of what the service
(`gpuq.service`) returns and dispatches the operator's actions to it; it never talks to a backend.
`app.make_app` is the one factory the command and the tests use.
"""
