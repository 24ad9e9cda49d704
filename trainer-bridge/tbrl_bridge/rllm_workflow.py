"""rLLM agent + workflow around TbrlEnv (guarded: needs rLLM, which only GPU images carry).

The agent keeps the conversation exactly as the editor's agent loop builds it (system prompt and
task message from env-server ``reset``, then one user message per observation) and hands the model's
text to the env-server unparsed: action parsing is the TypeScript parser's job. When an episode ends,
DepGPO's per-step factors (env-server ``credit``) are stored on the trajectory's info under
``depgpo`` for the advantage estimator.
"""

from __future__ import annotations

from typing import Any

from .rllm_env import RLLM_IMPORT_ERROR, TbrlEnv

try:
    from rllm.agents.agent import Action, BaseAgent, Step, Trajectory  # type: ignore
    from rllm.workflows.multi_turn_workflow import MultiTurnWorkflow  # type: ignore
    from rllm.workflows.workflow import TerminationEvent  # type: ignore

    WORKFLOW_IMPORT_ERROR = None
except Exception as err:
    WORKFLOW_IMPORT_ERROR = f"{type(err).__name__}: {err}" if RLLM_IMPORT_ERROR is None else RLLM_IMPORT_ERROR


def require_rllm() -> None:
    if WORKFLOW_IMPORT_ERROR is not None:
        raise RuntimeError(f"rLLM is not importable ({WORKFLOW_IMPORT_ERROR}); install it on the training image (pip install 'tbrl-bridge[train]')")


if WORKFLOW_IMPORT_ERROR is None:

    class TbrlAgent(BaseAgent):  # type: ignore[misc,valid-type]
        def __init__(self, **_: Any):
            self.reset()

        def reset(self) -> None:
            self._trajectory = Trajectory()
            self.messages: list[dict] = []

        @property
        def chat_completions(self) -> list[dict]:
            return self.messages

        @property
        def trajectory(self):
            return self._trajectory

        def update_from_env(self, observation: Any, reward: float, done: bool, info: dict, **kwargs: Any) -> None:
            if not self.messages and info.get("messages"):
                self.messages = [dict(m) for m in info["messages"]]
            elif observation:
                self.messages.append({"role": "user", "content": str(observation)})
            if self._trajectory.steps:
                last = self._trajectory.steps[-1]
                last.reward = reward
                last.done = done
                last.info = info

        def update_from_model(self, response: str, **kwargs: Any):
            self.messages.append({"role": "assistant", "content": response})
            self._trajectory.steps.append(Step(chat_completions=list(self.messages), model_response=response, action=response))
            return Action(action=response)

    class TbrlWorkflow(MultiTurnWorkflow):  # type: ignore[misc,valid-type]
        """MultiTurnWorkflow over TbrlEnv that records DepGPO credit when the episode ends."""

        def __init__(self, max_steps: int = 50, **kwargs: Any):
            super().__init__(agent_cls=TbrlAgent, env_cls=TbrlEnv, env_args={"task": "", "max_steps": max_steps}, max_steps=max_steps, **kwargs)

        async def run(self, task: dict, uid: str, **kwargs: Any):
            try:
                return await super().run(task, uid, **kwargs)
            except TerminationEvent:
                try:
                    steps = self.agent.trajectory.steps
                    if steps and not steps[-1].done:
                        # Out of turns before <finish>: the tests still decide the reward (Terminal-Bench parity).
                        steps[-1].reward = self.env.evaluate()
                        steps[-1].done = True
                    credit = self.env.credit()
                    self.agent.trajectory.info = {**(getattr(self.agent.trajectory, "info", None) or {}), "depgpo": credit}
                finally:
                    self.env.close()
                raise


if WORKFLOW_IMPORT_ERROR is None:
    # verl computes advantages inside rLLM's TaskRunner actor, another process than the job driver;
    # that actor imports this module when it unpickles TbrlWorkflow, so registering here puts
    # `depgpo` into the registry of the process that uses it.
    import os

    from .advantage import register_with_verl
    from .algorithms import uses_step_factors
    from .rllm_advantage import install_in_rllm

    register_with_verl()
    if uses_step_factors(os.environ.get("TBRL_ALGORITHM")):
        install_in_rllm()
