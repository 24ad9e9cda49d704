"""rLLM environment whose every step goes through ``tbrl env-server`` (guarded import of rLLM).

The agent's text is passed verbatim to the server, which parses the actions (XML tag + YAML body),
runs them in the task's container and answers the observation; the reward comes from the same
test/judge code as ``tbrl run``. After an episode, ``credit`` gives DepGPO's per-step factors.
"""

from __future__ import annotations

from typing import Any, Optional

from .envclient import EnvServerClient

try:  # rLLM is only on GPU training images
    from rllm.environments.base.base_env import BaseEnv  # type: ignore

    RLLM_IMPORT_ERROR: Optional[str] = None
except Exception as err:  # ImportError or a broken torch install under it
    BaseEnv = object  # type: ignore[assignment,misc]
    RLLM_IMPORT_ERROR = f"{type(err).__name__}: {err}"


class TbrlEnv(BaseEnv):  # type: ignore[misc,valid-type]
    """One task episode. ``task`` is a task directory on the node (from the dataset's extra_info)."""

    def __init__(self, task: str, max_steps: int = 50, client: Optional[EnvServerClient] = None, **reset_options: Any):
        if BaseEnv is not object:
            super().__init__()
        self.task = task
        self.max_steps = max_steps
        self.reset_options = reset_options
        self._client = client
        self._own_client = client is None
        self.last_info: dict = {}

    @property
    def client(self) -> EnvServerClient:
        if self._client is None:
            self._client = EnvServerClient()
        return self._client

    def reset(self, task: Optional[dict] = None) -> tuple[str, dict]:
        """rLLM workflows pass the dataset row's task; its extra_info.task_dir is inside the bundle."""
        if task:
            self.task = task_dir_of(task) or self.task
        r = self.client.reset(self.task, maxSteps=self.max_steps, **self.reset_options)
        # The exact system + first user message the editor's agent sees, for the policy's prompt.
        return r["observation"], {**r.get("info", {}), "messages": r.get("messages", [])}

    def step(self, action: Any) -> tuple[str, float, bool, dict]:
        text = action if isinstance(action, str) else getattr(action, "action", str(action))
        r = self.client.step(text)
        self.last_info = r.get("info", {})
        return r["observation"], float(r.get("reward", 0.0)), bool(r.get("done", False)), self.last_info

    def evaluate(self) -> float:
        """Scores an episode the workflow ended (turn budget) before the agent finished."""
        return float(self.client.evaluate().get("reward", 0.0))

    def credit(self, group_advantage: Optional[float] = None) -> dict:
        return self.client.credit(**({} if group_advantage is None else {"groupAdvantage": group_advantage}))

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close_episode()
            finally:
                if self._own_client:
                    self._client.close()
                    self._client = None

    @staticmethod
    def from_dict(info: dict) -> "TbrlEnv":
        task = task_dir_of(info)
        if not task:
            raise ValueError("TbrlEnv.from_dict needs task_dir (the dataset's extra_info.task_dir)")
        return TbrlEnv(task=task, max_steps=int(info.get("max_steps", 50)))

    @staticmethod
    def is_multithread_safe() -> bool:
        # Each instance owns its env-server process and container.
        return True


def task_dir_of(task: dict) -> Optional[str]:
    extra = task.get("extra_info") if isinstance(task.get("extra_info"), dict) else {}
    return task.get("task_dir") or extra.get("task_dir")
