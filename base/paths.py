"""Where kafka-chaos keeps its files: the repo's docker/ build context and the per-user cache."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCKER_CONTEXT = REPO_ROOT / "docker"


def cache_dir() -> Path:
    """Jars, the base rootfs and build contexts; KAFKA_CHAOS_CACHE overrides ~/.cache/kafka-chaos."""
    root = os.environ.get("KAFKA_CHAOS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka-chaos"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path
