"""Which commands tell the backend they show no ledger (`Backend.snapshot(ledger=False)`): only
those that show queued jobs alone, so a backend may skip waiting for its accounting read."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.conftest import Runner as Run


@pytest.mark.parametrize(
    ("args", "ledger"),
    [
        (("queue",), [False]),
        (("queue", "--state", "pending,running"), [False]),
        (("queue", "--state", "completing,suspended"), [False]),
        (("queue", "--state", "completed"), [True]),  # finished jobs come from the ledger
        (("queue", "--state", "all"), [True]),
        (("gpus",), [False]),
        (("job", "201"), [False]),  # a queued job
        (("job", "301"), [False, True]),  # a finished one: read again with the ledger
        (("job", "999"), [False, True]),  # not queued: perhaps finished, so asked with the ledger
        (("preemptions",), [True]),
        (("sla",), [True]),
        (("overview",), [True]),
        (("snapshot",), [True]),
    ],
)
def test_ledger_flag_per_command(gpuq: Run, fake: Any, args: tuple[str, ...], ledger: list[bool]) -> None:
    output = () if args[0] == "snapshot" else ("-o", "json")
    result = gpuq("--backend", "fake", *args, *output)
    assert result.exit_code == (1 if args == ("job", "999") else 0), result.output
    assert fake.state["ledger"] == ledger
