"""``tbrl_env``: a verl agent loop whose environment is ``tbrl env-server``.

verl's rollout workers call ``run(sampling_params, **dataset_row)`` for every sample; this loop
resets the row's task in the env-server (the editor's sandbox, action parser and reward), asks
verl's LLM server for each turn, steps the env-server with the decoded action, and returns verl's
AgentLoopOutput: prompt ids, response ids with mask 0 on observation tokens, the reward, and in
``extra_fields`` the per-token DepGPO factors (read by verl_glue's advantage step), the outcome
class and whether the rollout is masked (an infra outcome: its response mask is all zero, so it is
neither in its group's statistics nor in the loss).

Registered under verl's agent-loop registry on import; GPU presets point
``actor_rollout_ref.rollout.agent.agent_loop_config_path`` at the yaml the entrypoint writes.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register  # type: ignore

from .episode import COMPACT_SYSTEM_PROMPT, run_episode
from .envclient import EnvServerClient, find_tbrl_command

AGENT_NAME = "tbrl_env"


@register(AGENT_NAME)
class TbrlEnvAgentLoop(AgentLoopBase):
    def __init__(self, *args, max_turns: int = 30, compact_prompt: bool = False, bundle_root: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_turns = int(max_turns)
        self.compact_prompt = bool(compact_prompt)
        self.bundle_root = Path(bundle_root or os.environ.get("TBRL_BUNDLE_ROOT", "."))
        self.response_length = int(self.rollout_config.response_length)

    def _task_dir(self, kwargs: dict) -> str:
        extra = kwargs.get("extra_info") or {}
        rel = extra.get("task_dir")
        if not rel:
            raise ValueError("the dataset row has no extra_info.task_dir: build the dataset with `tbrl train bundle`/`submit`")
        p = Path(rel)
        return str(p if p.is_absolute() else self.bundle_root / p)

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        task_dir = self._task_dir(kwargs)
        loop = asyncio.get_running_loop()

        def generate(prompt_ids: list[int]) -> list[int]:
            fut = asyncio.run_coroutine_threadsafe(self.server_manager.generate(request_id=uuid4().hex, prompt_ids=prompt_ids, sampling_params=sampling_params), loop)
            return list(fut.result().token_ids)

        def episode():
            cmd, how = find_tbrl_command()
            if cmd is None:
                raise RuntimeError(f"cannot start tbrl env-server on this node: {how}")
            with EnvServerClient(cmd) as client:
                client.initialize()
                return run_episode(client, self.tokenizer, task_dir, generate, self.max_turns, COMPACT_SYSTEM_PROMPT if self.compact_prompt else None)

        ep = await asyncio.to_thread(episode)
        n = self.response_length
        mask = [0] * min(len(ep.response_mask), n) if ep.masked else ep.response_mask[:n]
        return AgentLoopOutput(
            prompt_ids=ep.prompt_ids,
            response_ids=ep.response_ids[:n],
            response_mask=mask,
            reward_score=ep.reward,
            num_turns=1 + 2 * len(ep.turns),
            metrics=AgentLoopMetrics(),
            extra_fields={
                "depgpo_token_factors": ep.token_factors[:n],
                "tbrl_outcome": ep.outcome,
                "tbrl_masked": ep.masked,
                "turn_scores": [],
                "tool_rewards": [],
            },
        )
