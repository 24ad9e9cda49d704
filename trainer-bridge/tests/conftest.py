import sys
from pathlib import Path

BRIDGE = Path(__file__).resolve().parents[1]
REPO = BRIDGE.parent
sys.path.insert(0, str(BRIDGE))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_policy():
    """SmolLM2-135M from the studio's GGUF, loaded once per session (about 30 s on 2 cores)."""
    pytest.importorskip("torch", reason="needs .venv/train (bash scripts/setup.sh)")
    from tbrl_bridge.policy import default_model_path, load_policy

    path = default_model_path()
    if not path.is_file():
        pytest.fail(f"{path} is missing: bash scripts/fetch-model.sh (scripts/setup.sh runs it)")
    return load_policy(path, seed=0)
