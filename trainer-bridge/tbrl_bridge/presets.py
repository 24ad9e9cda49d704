"""Training presets (presets.json, shared with the TypeScript client) and their Hydra overrides."""

from __future__ import annotations

import json
from pathlib import Path

from .algorithms import algorithm_names, algorithm_spec, default_algorithm

PRESETS_FILE = Path(__file__).with_name("presets.json")


def load_presets() -> dict:
    return json.loads(PRESETS_FILE.read_text(encoding="utf-8"))


def hydra_overrides(preset: dict, data_dir: str, algorithm: str, agent_loop_config: str = "") -> list[str]:
    """verl (main_ppo, ppo_trainer.yaml) overrides for a GPU preset: verl's async rollout with the
    ``tbrl_env`` agent loop (tbrl_bridge/verl_agent_loop.py) driving tbrl env-server. The hyper-
    parameters follow Terminal-Bench-RL's launch presets."""
    seq = int(preset["maxSequenceLength"])
    prompt = int(preset["maxPromptLength"])
    # algorithms.json names each algorithm's verl estimator (the bridge registers those verl lacks).
    adv = algorithm_spec(algorithm if algorithm in algorithm_names() else default_algorithm())["verlEstimator"]
    out = [
        f"algorithm.adv_estimator={adv}",
        "algorithm.norm_adv_by_std_in_grpo=True",
        "algorithm.use_kl_in_reward=False",
        f"data.train_files={data_dir}/train.parquet",
        f"data.val_files={data_dir}/train.parquet",
        f"data.train_batch_size={preset['trainBatchSize']}",
        f"data.max_prompt_length={prompt}",
        f"data.max_response_length={seq - prompt}",
        "data.filter_overlong_prompts=True",
        "data.return_raw_chat=True",
        f"actor_rollout_ref.model.path={preset['model']}",
        "actor_rollout_ref.model.enable_gradient_checkpointing=True",
        f"actor_rollout_ref.actor.optim.lr={preset['lr']}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={preset['ppoMiniBatchSize']}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={preset['ppoMicroBatchSizePerGpu']}",
        f"actor_rollout_ref.actor.clip_ratio_high={preset['clipRatioHigh']}",
        "actor_rollout_ref.actor.use_kl_loss=False",
        "actor_rollout_ref.actor.entropy_coeff=0",
        f"actor_rollout_ref.actor.ulysses_sequence_parallel_size={preset['ulyssesParallel']}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={preset['ppoMicroBatchSizePerGpu']}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={preset['ppoMicroBatchSizePerGpu']}",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.n={preset['rolloutsPerTask']}",
        f"actor_rollout_ref.rollout.temperature={preset['temperature']}",
        f"actor_rollout_ref.rollout.top_p={preset['topP']}",
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={preset['tensorParallel']}",
        f"actor_rollout_ref.rollout.gpu_memory_utilization={preset['gpuMemoryUtilization']}",
        f"actor_rollout_ref.rollout.max_model_len={seq}",
        "actor_rollout_ref.rollout.agent.default_agent_loop=tbrl_env",
        "trainer.logger=['console']",
        f"trainer.n_gpus_per_node={preset['nGpusPerNode']}",
        f"trainer.nnodes={preset['nnodes']}",
        f"trainer.save_freq={preset['saveFreq']}",
        "trainer.test_freq=-1",
        f"trainer.total_epochs={preset['epochs']}",
        "trainer.val_before_train=False",
    ]
    if agent_loop_config:
        out.append(f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_config}")
    return out


def agent_loop_yaml(preset: dict, bundle_root: str) -> str:
    """verl's agent_loop_config_path file: registers ``tbrl_env`` in every rollout worker."""
    return (
        "- name: tbrl_env\n"
        "  _target_: tbrl_bridge.verl_agent_loop.TbrlEnvAgentLoop\n"
        f"  max_turns: {int(preset['maxSteps'])}\n"
        f"  bundle_root: {bundle_root!r}\n"
    )


def merge_overrides(base: list[str], extra: list[str]) -> list[str]:
    """Preset overrides with the user's on top: a user key replaces the preset's (Hydra refuses a key twice)."""
    def key(o: str) -> str:
        return o.split("=", 1)[0].lstrip("+~")

    user = {key(o) for o in extra}
    return [o for o in base if key(o) not in user] + list(extra)
