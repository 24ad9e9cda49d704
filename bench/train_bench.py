"""cpu-tiny learning benchmark (issue 19): base vs GRPO vs DepGPO on the echo-word family.

Trains SmolLM2-135M from the same start and seeds for a fixed small budget with each estimator,
then evaluates base, GRPO and DepGPO on held-out seeds through the same env-server episodes
(pass rate, mean reward). Also reports, over the training rollouts, the fraction of groups whose
advantages are all zero with the sparse reward (pass = 1, else 0) vs the shaped reward (weighted
tests), the argument for progress-based rewards. Run: node --import tsx bench/train.bench.ts
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "trainer-bridge"))

import torch  # noqa: E402

from tbrl_bridge.cpu_train import TinyConfig, policy_update  # noqa: E402
from tbrl_bridge.episode import COMPACT_SYSTEM_PROMPT, run_episode  # noqa: E402
from tbrl_bridge.envclient import EnvServerClient  # noqa: E402
from tbrl_bridge.policy import Policy, default_model_path, load_policy, sample  # noqa: E402
from tbrl_bridge.tiny_tasks import write_family  # noqa: E402

STEPS = int(os.environ.get("TBRL_BENCH_STEPS", "3"))
GROUP = int(os.environ.get("TBRL_BENCH_GROUP", "4"))
TRAIN_SEEDS = [1, 2, 3, 4]
EVAL_SEEDS = [101, 102, 103, 104]
EVAL_SAMPLES = int(os.environ.get("TBRL_BENCH_EVAL_SAMPLES", "2"))
MAX_TURNS = 2
MAX_NEW = 32
TBRL = [str(REPO / "node_modules" / ".bin" / "tsx"), str(REPO / "src" / "cli" / "main.ts")]


def episodes_for(client, policy, task, n, seed):
    out = []
    for k in range(n):
        torch.manual_seed(seed * 1000 + k)
        out.append(run_episode(client, policy.tokenizer, task, lambda ids: sample(policy, ids, 1, MAX_NEW, 1.0, 1.0)[0], MAX_TURNS, COMPACT_SYSTEM_PROMPT))
    return out


def zero_groups(rewards_by_group):
    return sum(1 for rs in rewards_by_group if len(set(rs)) <= 1) / max(1, len(rewards_by_group))


def train(client, base: Policy, tasks, algorithm):
    p = Policy(copy.deepcopy(base.model), base.tokenizer, base.path)
    cfg = TinyConfig(algorithm=algorithm, lr=2e-5)
    opt = torch.optim.AdamW(p.model.parameters(), lr=cfg.lr, weight_decay=0.0)
    sparse, shaped = [], []
    t0 = time.time()
    for step in range(STEPS):
        batch = [tasks[(step * 2 + k) % len(tasks)] for k in range(2)]
        eps, groups = [], []
        for g, t in enumerate(batch):
            group = episodes_for(client, p, t, GROUP, step * 10 + g)
            eps += group
            groups += [g] * len(group)
            scored = [e for e in group if not e.masked]
            shaped.append([e.reward for e in scored])
            sparse.append([1.0 if e.outcome == "passed" else 0.0 for e in scored])
        res = policy_update(p, opt, eps, groups, cfg, step, ",".join(Path(t).name for t in batch))
        print(f"  {algorithm} step {step}: reward {sum(e.reward for e in eps) / len(eps):.3f}, grad norm {res.grad_norm:.3f}{' (' + res.skipped + ')' if res.skipped else ''}", flush=True)
    return p, time.time() - t0, zero_groups(sparse), zero_groups(shaped)


def evaluate(client, policy, tasks):
    eps = []
    for i, t in enumerate(tasks):
        eps += episodes_for(client, policy, t, EVAL_SAMPLES, 9000 + i)
    scored = [e for e in eps if not e.masked]
    return (sum(1 for e in scored if e.outcome == "passed") / max(1, len(scored)), sum(e.reward for e in scored) / max(1, len(scored)), len(eps) - len(scored))


def main():
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="tbrl-train-bench-"))
    train_tasks = [str(d) for d in write_family(tmp / "train", TRAIN_SEEDS)]
    eval_tasks = [str(d) for d in write_family(tmp / "eval", EVAL_SEEDS)]
    torch.manual_seed(0)
    base = load_policy(default_model_path(), 0)
    rows = {}
    with EnvServerClient(TBRL, timeout=600) as client:
        client.initialize()
        results = {}
        for algo in ("grpo", "depgpo"):
            results[algo] = train(client, base, train_tasks, algo)
        for name, pol in (("base", base), ("grpo", results["grpo"][0]), ("depgpo", results["depgpo"][0])):
            rows[name] = evaluate(client, pol, eval_tasks)
    print(f"\ncpu-tiny, SmolLM2-135M, echo-word: {STEPS} steps x 2 tasks x {GROUP} rollouts, lr 2e-5; eval {len(EVAL_SEEDS)} held-out tasks x {EVAL_SAMPLES} samples")
    print("| policy | pass rate | mean reward | train wall time | masked |")
    print("|---|---|---|---|---|")
    for name in ("base", "grpo", "depgpo"):
        pr, mr, masked = rows[name]
        wall = f"{results[name][1]:.0f} s" if name in results else "-"
        print(f"| {name} | {pr:.3f} | {mr:.3f} | {wall} | {masked} |")
    for algo in ("grpo", "depgpo"):
        print(f"{algo}: mean reward vs base {rows[algo][1] - rows['base'][1]:+.3f}")
    g = results["grpo"]
    print(f"zero-advantage groups in GRPO training: sparse reward {g[2]:.2f}, shaped (weighted tests) {g[3]:.2f}")
    print(json.dumps({"rows": rows, "zero_adv": {"sparse": g[2], "shaped": g[3]}}))


if __name__ == "__main__":
    main()
