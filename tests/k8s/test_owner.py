"""A pod's owner as `Job.owner`, ``Kind/namespace/name``: its JobSet by label, else its controlling
ownerReference; the same key on a Kueue Workload's pending job."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from gpuq.backends.kubernetes import convert
from gpuq.backends.kubernetes import wire as w


def _pod(labels: dict[str, str], refs: list[dict[str, Any]]) -> w.Pod:
    doc = {"metadata": {"name": "p-0", "namespace": "ml", "labels": labels, "ownerReferences": refs,
                        "creationTimestamp": "2026-11-29T10:00:00Z"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]},
           "status": {"phase": "Pending"}}  # fmt: skip
    return msgspec.json.decode(msgspec.json.encode(doc), type=w.Pod)


_JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "train-workers-0", "uid": "u1", "controller": True}


@pytest.mark.parametrize(
    ("labels", "refs", "owner", "comment"),
    [
        ({convert.JOBSET_LABEL: "train"}, [_JOB], "JobSet/ml/train", "JobSet/train"),
        ({}, [_JOB], "Job/ml/train-workers-0", "Job/train-workers-0"),
        (
            {},
            [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "bert", "uid": "u2", "controller": True}],
            "PyTorchJob/ml/bert",
            "PyTorchJob/bert",
        ),  # fmt: skip
        ({}, [{**_JOB, "controller": False}], None, None),  # an owner that does not control the pod
        ({}, [], None, None),
    ],
)
def test_the_owner_of_a_pod(labels: dict[str, str], refs: list[dict[str, Any]], owner: str | None,
                            comment: str | None) -> None:  # fmt: skip
    job = convert.pod_job(_pod(labels, refs))
    assert (job.owner, job.comment) == (owner, comment)
    assert convert.owner_key(_pod(labels, refs)) == owner
