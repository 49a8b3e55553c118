"""README's opening says what the Kubernetes backend does, and no longer that it only reads."""

from __future__ import annotations

from pathlib import Path

from gpuq.backends.kubernetes.backend import ACTIONS, KubernetesBackend

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_opening_says_what_the_kubernetes_backend_does() -> None:
    opening = README.read_text().split("\n\n")[1]  # (the paragraph under the title)
    assert "Kubernetes" in opening and "read-only" not in opening
    for action in sorted(ACTIONS):
        assert action in opening, action
    for word in ("watch", "evict", "kube-scheduler", "Kueue"):
        assert word in opening, word
    assert KubernetesBackend.name == "kubernetes"
