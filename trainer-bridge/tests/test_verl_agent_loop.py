"""verl's agent-loop machinery driving tbrl env-server on CPU.

The loop is registered and instantiated exactly as verl 0.9.1's AgentLoopWorker does it (the
agent_loop_config_path yaml into ``_agent_loop_registry``, ``hydra.utils.instantiate`` with verl's
own composed config, tokenizer and dataset class). The one replacement: verl's LLM server (vLLM or
SGLang replicas, which need GPUs) is a CPU server answering the same ``generate`` call with the real
SmolLM2-135M through transformers. The episode runs in real Docker through the real env-server."""

import asyncio
import os
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs .venv/train (bash scripts/setup.sh)")
pytest.importorskip("verl.experimental.agent_loop.agent_loop", reason="needs .venv/train (bash scripts/setup.sh)")

import hydra  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop import agent_loop as verl_agent_loop  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from tbrl_bridge.policy import sample  # noqa: E402
from tbrl_bridge.presets import agent_loop_yaml, hydra_overrides, load_presets  # noqa: E402
from tbrl_bridge.tiny_tasks import write_task  # noqa: E402
from tbrl_bridge.verl_main import compose_config  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TBRL = f"{REPO / 'node_modules' / '.bin' / 'tsx'} {REPO / 'src' / 'cli' / 'main.ts'}"


class CpuLLMServer:
    """verl's LLMServerClient.generate contract, answered by the CPU policy (no vLLM without a GPU)."""

    def __init__(self, policy):
        self.policy = policy
        self.calls = []
        self.generated = 0

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        self.calls.append((request_id, len(prompt_ids), dict(sampling_params)))
        ids = sample(self.policy, list(prompt_ids), 1, int(sampling_params.get("max_tokens", 24)), float(sampling_params.get("temperature", 1.0)), float(sampling_params.get("top_p", 1.0)))[0]
        self.generated += len(ids)
        return TokenOutput(token_ids=ids, stop_reason="completed")


@pytest.mark.skipif(not shutil.which("docker") and not os.path.exists("/var/run/docker.sock"), reason="the env-server needs Docker")
def test_tbrl_env_agent_loop_runs_an_env_server_episode_through_verl(tiny_policy, tmp_path, monkeypatch):
    monkeypatch.setenv("TBRL_CLI", TBRL)
    torch.manual_seed(3)
    task = write_task(tmp_path / "tasks", 1)
    preset = dict(load_presets()["test_8b_2_gpus"], maxSteps=2)
    loop_yaml = tmp_path / "loop.yaml"
    loop_yaml.write_text(agent_loop_yaml(preset, str(tmp_path)))
    config = compose_config(hydra_overrides(preset, str(tmp_path), "depgpo", str(loop_yaml)) + ["data.max_prompt_length=1024", "data.max_response_length=512", "actor_rollout_ref.model.path=" + str(tiny_policy.path.parent)])
    # What AgentLoopWorker.__init__ does with agent_loop_config_path:
    for entry in OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path):
        verl_agent_loop._agent_loop_registry[entry.name] = entry
    assert "tbrl_env" in verl_agent_loop._agent_loop_registry
    server = CpuLLMServer(tiny_policy)
    # What AgentLoopWorker._run_agent_loop does:
    loop = hydra.utils.instantiate(
        config=verl_agent_loop._agent_loop_registry["tbrl_env"],
        trainer_config=verl_agent_loop.DictConfigWrap(config=config),
        server_manager=server,
        tokenizer=tiny_policy.tokenizer,
        processor=None,
        hf_model_type="llama",
        dataset_cls=RLHFDataset,
        data_config=verl_agent_loop.DictConfigWrap(config.data),
        tools=verl_agent_loop.ToolListWrap([]),
    )
    assert loop.max_turns == 2
    row = {"raw_prompt": [], "extra_info": {"task_dir": str(task.relative_to(tmp_path))}, "data_source": "tbrl"}
    out = asyncio.run(loop.run({"temperature": 1.0, "top_p": 1.0, "max_tokens": 24}, **row))
    assert 1 <= len(server.calls) <= 2
    assert len(out.response_ids) == len(out.response_mask) == len(out.extra_fields["depgpo_token_factors"])
    # Mask 1 exactly on the tokens the server generated; observation tokens in between are 0.
    assert sum(out.response_mask) == server.generated > 0
    assert out.extra_fields["tbrl_outcome"] in ("passed", "failed")
    assert out.extra_fields["tbrl_masked"] is False
    assert 0.0 <= out.reward_score <= 1.0
    # The prompt is the env-server's (system + task), tokenised by the model's chat template.
    assert "/app/answer.txt" in tiny_policy.tokenizer.decode(out.prompt_ids)
    d = out.as_dict()
    assert d["responses"].shape == d["response_mask"].shape and float(d["rm_scores"][-1]) == pytest.approx(out.reward_score)
