"""`bump --urgent` never lowers a job's priority (the demo; Slurm: tests/slurm/test_lab_8_what_if_priority.py)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Runner, json_doc


def _jobs(demo: Runner, policy: Path) -> dict[str, dict[str, object]]:
    return {j["id"]: j for j in json_doc(demo("--policy", str(policy), "queue", "-o", "json"))["jobs"]}


def test_urgent_on_a_job_above_the_urgent_priority_is_a_no_op_that_says_so(demo: Runner, tmp_path: Path) -> None:
    first = json_doc(demo("queue", "-o", "json"))["jobs"]
    running = [j for j in first if j["state"] == "running" and not j.get("urgent")]
    top = max(running, key=lambda j: j["effective_priority"])
    below = min(running, key=lambda j: j["effective_priority"])
    # An urgent priority between the two: urgency would lower `top`, and raise `below`.
    urgent = int(top["effective_priority"]) - 1
    assert below["effective_priority"] < urgent
    policy = tmp_path / "policy.toml"
    policy.write_text(f"[preemption]\nurgent_priority = {urgent}\n")

    result = demo("--policy", str(policy), "bump", top["id"], "--urgent", "--yes")
    assert result.exit_code == 0, result.output
    assert (f"job {top['id']} is already at effective priority {top['effective_priority']:g}, above the urgent "
            f"priority {urgent}: --urgent would lower it; nothing changed") in result.stdout  # fmt: skip
    after = _jobs(demo, policy)[top["id"]]
    assert not after.get("urgent")
    assert after["effective_priority"] == top["effective_priority"]

    raised = demo("--policy", str(policy), "bump", below["id"], "--urgent", "--yes")
    assert raised.exit_code == 0, raised.output
    assert _jobs(demo, policy)[below["id"]]["effective_priority"] == urgent
