"""cpu-tiny: GRPO/DepGPO on a 135M model on CPU, through the editor's environment.

The engine is verl's own: the studio's estimator registered in verl's advantage registry
(``get_adv_estimator_fn('depgpo')``; GRPO is the same function with every factor 1) and verl's PPO
policy loss (``get_policy_loss_fn('vanilla')``, the clipped objective the GPU presets train with),
on a transformers model loaded from the studio's GGUF, stepped by torch's AdamW. Rollouts are
episodes of ``tbrl env-server``. See trainer-bridge/README.md ("cpu-tiny") for why not TRL.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .episode import COMPACT_SYSTEM_PROMPT, Episode, run_episode
from .envclient import EnvServerClient
from .metrics import MetricsWriter
from .policy import Policy, default_model_path, load_policy, sample, token_logprobs, train_top_layers, use_turn_end_as_eos


class TrainConfigError(ValueError):
    """A bad cpu-tiny setting: the message names the key, the value and what is allowed."""


class TrainingError(RuntimeError):
    pass


@dataclass
class TinyConfig:
    model: str = ""
    algorithm: str = "grpo"
    steps: int = 4
    group_size: int = 4
    tasks_per_step: int = 2
    max_turns: int = 2
    max_new_tokens: int = 40
    lr: float = 2e-5
    temperature: float = 1.0
    top_p: float = 1.0
    clip_ratio: float = 0.2
    clip_ratio_high: float = 0.28
    max_grad_norm: float = 1.0
    seed: int = 0
    save_every: int = 0
    # 0: full fine-tuning; N: only the last N decoder layers (+ final norm) train.
    train_layers: int = 0
    compact_prompt: bool = True
    family_seeds: list = field(default_factory=lambda: [1, 2, 3, 4])
    # On a Ray cluster: how often a lost training worker is restarted from the last checkpoint
    # before the job fails (entrypoint.supervise).
    max_restarts: int = 1

    INT_KEYS = ("steps", "group_size", "tasks_per_step", "max_turns", "max_new_tokens", "seed", "save_every", "train_layers", "max_restarts")
    FLOAT_KEYS = ("lr", "temperature", "top_p", "clip_ratio", "clip_ratio_high", "max_grad_norm")


def tiny_config(preset: dict, overrides: list[str], algorithm: str) -> TinyConfig:
    """The preset's `cpu` block, then `tbrl.<key>=value` overrides; anything wrong fails here, before a model loads."""
    cfg = TinyConfig(algorithm=algorithm)
    values = dict(preset.get("cpu", {}))
    for o in overrides:
        key, eq, value = o.lstrip("+~").partition("=")
        if not key.startswith("tbrl."):
            raise TrainConfigError(f"override {o!r} is not a cpu-tiny setting: the cpu-tiny preset has no Hydra config. Fix: use tbrl.<key>=value with key one of {', '.join(k for k in asdict(cfg) if k != 'algorithm')}")
        if not eq:
            raise TrainConfigError(f"override {o!r} has no value. Fix: write it as {key}=VALUE")
        values[key[len("tbrl."):]] = value
    for k, v in values.items():
        if k not in asdict(cfg) or k == "algorithm":
            raise TrainConfigError(f"unknown cpu-tiny setting {k!r}. Fix: use one of {', '.join(x for x in asdict(cfg) if x != 'algorithm')}")
        try:
            if k in TinyConfig.INT_KEYS:
                v = int(v)
                if v < (0 if k in ("seed", "save_every", "train_layers", "max_restarts") else 1):
                    raise ValueError("must be positive")
            elif k in TinyConfig.FLOAT_KEYS:
                v = float(v)
                if not math.isfinite(v) or v < 0 or (k in ("lr", "temperature", "top_p") and v == 0):
                    raise ValueError("must be a finite positive number")
            elif k == "compact_prompt":
                v = v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")
            elif k == "family_seeds":
                v = [int(x) for x in (v if isinstance(v, list) else str(v).strip("[]").split(",")) if str(x).strip()]
        except ValueError as err:
            raise TrainConfigError(f"cpu-tiny setting {k}={v!r} is invalid ({err}). Fix: pass tbrl.{k}=<{'integer' if k in TinyConfig.INT_KEYS else 'number'}>") from err
        setattr(cfg, k, v)
    if cfg.top_p > 1:
        raise TrainConfigError(f"cpu-tiny setting top_p={cfg.top_p} is above 1. Fix: pass tbrl.top_p in (0, 1]")
    if cfg.group_size < 2:
        raise TrainConfigError("cpu-tiny setting group_size=1 gives every rollout advantage 0 (GRPO compares rollouts of one task). Fix: tbrl.group_size=2 or more")
    return cfg


def verl_loss_config(cfg: TinyConfig):
    from omegaconf import OmegaConf

    # verl's loss functions read these keys of the actor config (clip ratios, dual-clip bound, the
    # batch info agg_loss uses to keep the loss independent of parallelism: one process here).
    conf = OmegaConf.create({"clip_ratio": cfg.clip_ratio, "clip_ratio_low": cfg.clip_ratio, "clip_ratio_high": cfg.clip_ratio_high, "clip_ratio_c": 3.0, "global_batch_info": {}, "loss_agg_mode": "token-mean"})
    return conf


@dataclass
class UpdateResult:
    loss: float
    grad_norm: float
    entropy: float
    skipped: Optional[str] = None
    zero_adv_groups: int = 0
    groups: int = 0


def advantages_for(episodes: list[Episode], groups: list[int], algorithm: str):
    """[B, T] token advantages from the studio's estimator as registered in verl."""
    import torch
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    from .advantage import register_with_verl
    from .algorithms import uses_step_factors

    why = register_with_verl()
    if why:
        raise TrainingError(f"cannot register the DepGPO estimator with verl: {why}")
    width = max(1, max(len(e.response_ids) for e in episodes))
    rewards = torch.zeros(len(episodes), width)
    mask = torch.zeros(len(episodes), width)
    factors = []
    for i, e in enumerate(episodes):
        n = len(e.response_ids)
        if n:
            rewards[i, n - 1] = e.reward
        if not e.masked:
            mask[i, :n] = torch.tensor(e.response_mask, dtype=torch.float32)
        factors.append((e.token_factors + [1.0] * width)[:width] if uses_step_factors(algorithm) else [1.0] * width)
    adv, _ = get_adv_estimator_fn("depgpo")(token_level_rewards=rewards, response_mask=mask, index=groups, config=None, depgpo_token_factors=factors)
    return adv, mask


def policy_update(policy: Policy, optimizer, episodes: list[Episode], groups: list[int], cfg: TinyConfig, step: int, batch_name: str) -> UpdateResult:
    import torch
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    adv, mask = advantages_for(episodes, groups, cfg.algorithm)
    by_group: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    zero = sum(1 for m in by_group.values() if float(adv[m].abs().sum()) == 0.0)
    if float(adv.abs().sum()) == 0.0:
        return UpdateResult(0.0, 0.0, float("nan"), "every advantage is 0 (no reward spread within any group, or all rollouts masked)", zero, len(by_group))
    width = adv.shape[1]
    logps, ents = [], []
    for e in episodes:
        n = len(e.response_ids)
        if n == 0:
            logps.append(torch.zeros(width))
            ents.append(torch.zeros(width))
            continue
        ids = torch.tensor([e.prompt_ids + e.response_ids], dtype=torch.long)
        lp, ent = token_logprobs(policy.model, ids, n, with_entropy=True)
        logps.append(torch.nn.functional.pad(lp[0], (0, width - n)))
        ents.append(torch.nn.functional.pad(ent[0].detach(), (0, width - n)))
    log_prob = torch.stack(logps)
    entropy = torch.stack(ents)
    loss_fn = get_policy_loss_fn("vanilla")
    # One update per batch of fresh rollouts: old = current policy (ratio 1, the clip never binds).
    pg_loss, _ = loss_fn(old_log_prob=log_prob.detach(), log_prob=log_prob, advantages=adv, response_mask=mask, loss_agg_mode="token-mean", config=verl_loss_config(cfg))
    if not torch.isfinite(pg_loss):
        raise TrainingError(f"the loss is {float(pg_loss)} at step {step}, batch {batch_name}: stopping before the optimizer step corrupts the weights (lower tbrl.lr, or check the rollouts of that batch)")
    optimizer.zero_grad(set_to_none=True)
    pg_loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_([p for p in policy.model.parameters() if p.requires_grad], cfg.max_grad_norm)
    if not torch.isfinite(grad_norm):
        raise TrainingError(f"the gradient norm is {float(grad_norm)} at step {step}, batch {batch_name}: stopping before the optimizer step (lower tbrl.lr)")
    optimizer.step()
    tok = mask.sum()
    return UpdateResult(float(pg_loss), float(grad_norm), float((entropy * mask).sum() / tok) if tok > 0 else 0.0, None, zero, len(by_group))


TRAINER_STATE = "trainer-state.pt"


def save_checkpoint(policy: Policy, out: Path, step: int, cfg: TinyConfig, extra: dict, optimizer=None) -> Path:
    """Weights + tokenizer (what `tbrl train fetch` converts), and with an optimizer its state too, so a
    lost worker resumes where it stopped. `latest` moves only once the folder is complete."""
    import torch

    d = out / f"step-{step:04d}"
    d.mkdir(parents=True, exist_ok=True)
    policy.model.save_pretrained(str(d), safe_serialization=True)
    policy.tokenizer.save_pretrained(str(d))
    if optimizer is not None:
        torch.save({"step": step, "optimizer": optimizer.state_dict()}, d / TRAINER_STATE)
    (d / "tbrl-checkpoint.json").write_text(json.dumps({"schema": "tbrl.checkpoint/1", "step": step, "base_gguf": str(policy.path), "config": asdict(cfg), **extra}, indent=2, default=str), encoding="utf-8")
    tmp = out / "latest.tmp"
    tmp.write_text(d.name + "\n", encoding="utf-8")
    tmp.replace(out / "latest")
    return d


def latest_checkpoint(out: Path) -> Optional[Path]:
    """The last complete checkpoint under out (the one `latest` names), or None."""
    marker = Path(out) / "latest"
    if not marker.is_file():
        return None
    d = Path(out) / marker.read_text(encoding="utf-8").strip()
    return d if (d / "tbrl-checkpoint.json").is_file() else None


def load_resume(checkpoint: Path, base: Path) -> tuple[Policy, int, Optional[dict]]:
    """The policy, step and optimizer state of a checkpoint written by save_checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    meta_path = Path(checkpoint) / "tbrl-checkpoint.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        model = AutoModelForCausalLM.from_pretrained(str(checkpoint), dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(str(checkpoint))
    except Exception as err:
        raise TrainingError(f"cannot resume from {checkpoint} ({type(err).__name__}: {err}). Fix: delete that folder (and its `latest` marker) to start over, or resubmit") from err
    use_turn_end_as_eos(tok)
    model.train()
    state_path = Path(checkpoint) / TRAINER_STATE
    state = torch.load(state_path, weights_only=False) if state_path.is_file() else None
    return Policy(model, tok, Path(meta.get("base_gguf") or base)), int(meta["step"]), (state or {}).get("optimizer")


def train_tiny(cfg: TinyConfig, task_dirs: list[str], tbrl_cmd: list[str], metrics: MetricsWriter, out_dir: Path, log: Callable[[str], None] = print, policy: Optional[Policy] = None, resume: Optional[Path] = None) -> Path:
    """Trains cfg.steps steps (from a checkpoint's step with ``resume``) and returns the last checkpoint."""
    import torch

    if not task_dirs:
        raise TrainConfigError("cpu-tiny has no tasks to train on. Fix: pass --tasks DIR..., or leave them out to use the built-in echo-word family")
    torch.manual_seed(cfg.seed)
    start = 0
    opt_state = None
    if resume is not None:
        policy, start, opt_state = load_resume(resume, Path(cfg.model) if cfg.model else default_model_path())
        log(f"resuming from checkpoint {resume} at step {start}{'' if opt_state else ' (no optimizer state in it: AdamW starts fresh)'}")
        metrics.event("resume", step=start, path=str(resume))
    if policy is None:
        t0 = time.time()
        policy = load_policy(Path(cfg.model) if cfg.model else default_model_path(), cfg.seed)
        log(f"model {policy.path.name}: {sum(p.numel() for p in policy.model.parameters()) / 1e6:.1f} M parameters in {time.time() - t0:.1f} s")
    trainable = train_top_layers(policy.model, cfg.train_layers)
    log(f"{trainable / 1e6:.1f} M trainable parameters ({'full fine-tuning' if not cfg.train_layers else f'last {cfg.train_layers} layers'})")
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=cfg.lr, weight_decay=0.0)
    if opt_state is not None:
        optimizer.load_state_dict(opt_state)
    system = COMPACT_SYSTEM_PROMPT if cfg.compact_prompt else None
    resumed = {"resumed_from": str(resume)} if resume is not None else {}
    last = None
    with EnvServerClient(tbrl_cmd, timeout=600) as client:
        client.initialize()
        for step in range(start, cfg.steps):
            # Seeded per step, not from one stream: a resumed run samples what the lost one would have.
            rng = random.Random(f"{cfg.seed}:{step}")
            batch_tasks = [task_dirs[(step * cfg.tasks_per_step + k) % len(task_dirs)] for k in range(cfg.tasks_per_step)]
            episodes: list[Episode] = []
            groups: list[int] = []
            t_roll = time.time()
            for g, task in enumerate(batch_tasks):
                for _ in range(cfg.group_size):
                    torch.manual_seed(rng.randrange(2**31))
                    ep = run_episode(client, policy.tokenizer, task, lambda ids: sample(policy, ids, 1, cfg.max_new_tokens, cfg.temperature, cfg.top_p)[0], cfg.max_turns, system)
                    episodes.append(ep)
                    groups.append(g)
                    if ep.masked:
                        log(f"step {step}: rollout on {Path(task).name} masked ({ep.outcome}: {ep.cause}); it is not trained on")
            roll_sec = time.time() - t_roll
            t_up = time.time()
            names = ",".join(Path(t).name for t in batch_tasks)
            res = policy_update(policy, optimizer, episodes, groups, cfg, step, names)
            scored = [e for e in episodes if not e.masked]
            spreads = [max(e.step_factors) - min(e.step_factors) for e in scored if e.step_factors]
            gen = sum(e.generated_tokens for e in episodes)
            values = {
                "reward/mean": sum(e.reward for e in scored) / len(scored) if scored else float("nan"),
                "reward/pass_rate": sum(1 for e in scored if e.outcome == "passed") / len(scored) if scored else float("nan"),
                "actor/entropy": res.entropy,
                "actor/grad_norm": res.grad_norm,
                "actor/pg_loss": res.loss,
                "depgpo/factor_spread": sum(spreads) / len(spreads) if spreads else 0.0,
                "perf/tokens_per_sec": gen / roll_sec if roll_sec > 0 else 0.0,
                "perf/rollout_sec": roll_sec,
                "perf/update_sec": time.time() - t_up,
                "batch/masked": float(len(episodes) - len(scored)),
                "batch/zero_adv_group_frac": res.zero_adv_groups / res.groups if res.groups else 0.0,
            }
            metrics.step(step, **values)
            if res.skipped:
                log(f"step {step}: no update ({res.skipped})")
            if cfg.save_every and (step + 1) % cfg.save_every == 0 and step + 1 < cfg.steps:
                last = save_checkpoint(policy, out_dir, step + 1, cfg, resumed, optimizer)
                metrics.event("checkpoint", step=step + 1, path=str(last))
    last = save_checkpoint(policy, out_dir, cfg.steps, cfg, resumed, optimizer if cfg.save_every else None)
    metrics.event("checkpoint", step=cfg.steps, path=str(last), final=True)
    log(f"checkpoint {last}")
    return last
