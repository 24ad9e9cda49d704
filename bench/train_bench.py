"""cpu-tiny learning benchmark (issue 19): base vs GRPO vs DepGPO on the echo-word family, and the
zero-advantage fraction of sparse vs PPRS rewards on Tev tasks.

1. Warm start. SmolLM2-135M with cpu-tiny's compact prompt never writes a parseable action (0 of 16
   samples at temperature 1), so every group would have reward 0 and advantage 0. The start policy is
   the base after SFT_STEPS full-batch supervised steps on oracle episodes of the *training* tasks
   (two turns through `tbrl env-server`: `ls /app`, then `echo WORD > /app/answer.txt`).
2. RL. From that start, with the same seeds, STEPS steps of GRPO and of DepGPO (cpu_train.policy_update:
   the studio's estimator in verl's registry, verl's vanilla policy loss, AdamW), TASKS_PER_STEP
   tasks x GROUP rollouts of MAX_TURNS turns each through the env-server.
3. Evaluation with the eval job command: every policy is exported to GGUF (gguf_export), served by
   `tbrl serve` on this helper's port range, and run by `tbrl eval` on held-out seeds (words the
   training never saw) with "promptVersion": "compact-v1" (the prompt it trained on).
4. Zero-advantage groups: over the RL rollouts, sparse (pass 1/0) vs the weighted tests; on Tev tasks
   (`tbrl synth`, unit tier), sparse vs PPRS (R = 1[pass] + 0.25 Φ(s_T), now what the env-server
   returns for tasks with a progress contract), for the start policy and for a partial oracle (the
   reference solution cut after a random number of its steps: a policy that gets part of the way).

Run: node --import tsx bench/train.bench.ts  (env: TBRL_BENCH_STEPS, _GROUP, _TASKS_PER_STEP,
_SFT_STEPS, _SFT_LR, _EVAL_ATTEMPTS, _LR, _TRAIN_SEEDS, _TEV_TASKS, _TEV_GROUP, _TEV_DIR, TBRL_BENCH_PORT;
TBRL_BENCH_PART=tev runs only the partial-oracle Tev groups, =learn everything else, =eval only `tbrl eval` of
the GGUFs a run left in TBRL_BENCH_WORK)
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "trainer-bridge"))

import torch  # noqa: E402

from tbrl_bridge.cpu_train import TinyConfig, policy_update, save_checkpoint  # noqa: E402
from tbrl_bridge.envclient import EnvServerClient  # noqa: E402
from tbrl_bridge.episode import COMPACT_SYSTEM_PROMPT, Episode, run_episode  # noqa: E402
from tbrl_bridge.gguf_export import export  # noqa: E402
from tbrl_bridge.policy import Policy, default_model_path, load_policy, sample, token_logprobs, train_top_layers  # noqa: E402
from tbrl_bridge.tiny_tasks import word_for, write_family  # noqa: E402

E = os.environ.get
STEPS = int(E("TBRL_BENCH_STEPS", "3"))
GROUP = int(E("TBRL_BENCH_GROUP", "4"))
TASKS_PER_STEP = int(E("TBRL_BENCH_TASKS_PER_STEP", "2"))
SFT_STEPS = int(E("TBRL_BENCH_SFT_STEPS", "4"))
SFT_LR = float(E("TBRL_BENCH_SFT_LR", "5e-5"))
LR = float(E("TBRL_BENCH_LR", "1e-5"))
EVAL_ATTEMPTS = int(E("TBRL_BENCH_EVAL_ATTEMPTS", "2"))
TEV_TASKS = int(E("TBRL_BENCH_TEV_TASKS", "2"))
TEV_GROUP = int(E("TBRL_BENCH_TEV_GROUP", "4"))
PORT = int(E("TBRL_BENCH_PORT", "50450"))
MAX_TURNS = 2
MAX_NEW = int(E("TBRL_BENCH_MAX_NEW", "40"))
# 0: full fine-tuning; N: only the last N decoder layers train (cpu-tiny's tbrl.train_layers), for SFT and RL alike.
TRAIN_LAYERS = int(E("TBRL_BENCH_TRAIN_LAYERS", "0"))
TEMPERATURE = 1.0
TRAIN_SEEDS = [int(x) for x in E("TBRL_BENCH_TRAIN_SEEDS", "1,2,3,4").split(",")]
TBRL = [str(REPO / "node_modules" / ".bin" / "tsx"), str(REPO / "src" / "cli" / "main.ts")]


def say(msg: str) -> None:
    print(f"[train-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def held_out_seeds(n: int) -> list[int]:
    seen = {word_for(s) for s in TRAIN_SEEDS}
    out, s = [], 101
    while len(out) < n:
        if word_for(s) not in seen:
            out.append(s)
            seen.add(word_for(s))
        s += 1
    return out


def scripted(tok, actions: list[str]):
    it = iter(actions)
    return lambda ids: tok.encode(next(it), add_special_tokens=False) + [tok.eos_token_id]


def oracle_episodes(client, policy: Policy, tasks: list[str]) -> list[Episode]:
    eps = []
    for d in tasks:
        word = word_for(int(Path(d).name.rsplit("-", 1)[1]))
        ep = run_episode(client, policy.tokenizer, d, scripted(policy.tokenizer, ["<bash>\ncmd: ls /app\n</bash>", f"<bash>\ncmd: echo {word} > /app/answer.txt\n</bash>"]), MAX_TURNS, COMPACT_SYSTEM_PROMPT)
        if ep.outcome != "passed":
            raise SystemExit(f"the oracle episode on {d} did not pass ({ep.outcome}: {ep.cause}); the env-server or Docker is not working")
        eps.append(ep)
    return eps


def sft(policy: Policy, eps: list[Episode]) -> float:
    """Full-batch supervised steps on the oracle turns (observation tokens carry no loss)."""
    opt = torch.optim.AdamW([q for q in policy.model.parameters() if q.requires_grad], lr=SFT_LR, weight_decay=0.0)
    loss = torch.tensor(0.0)
    for _ in range(SFT_STEPS):
        opt.zero_grad(set_to_none=True)
        loss = torch.tensor(0.0)
        for ep in eps:
            lp, _ = token_logprobs(policy.model, torch.tensor([ep.prompt_ids + ep.response_ids]), len(ep.response_ids))
            m = torch.tensor(ep.response_mask, dtype=torch.float32)
            loss = loss - (lp[0] * m).sum() / m.sum() / len(eps)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([q for q in policy.model.parameters() if q.requires_grad], 1.0)
        opt.step()
    return float(loss.detach())


def rollouts(client, policy: Policy, task: str, n: int, seed: int) -> list[Episode]:
    out = []
    for k in range(n):
        torch.manual_seed(seed * 1000 + k)
        out.append(run_episode(client, policy.tokenizer, task, lambda ids: sample(policy, ids, 1, MAX_NEW, TEMPERATURE, 1.0)[0], MAX_TURNS, COMPACT_SYSTEM_PROMPT))
    return out


def all_equal(values: list[float]) -> bool:
    return len(values) < 2 or max(values) - min(values) == 0


def train(client, start: Policy, tasks: list[str], algorithm: str) -> dict:
    p = Policy(copy.deepcopy(start.model), start.tokenizer, start.path)
    cfg = TinyConfig(algorithm=algorithm, lr=LR, train_layers=TRAIN_LAYERS)
    opt = torch.optim.AdamW([q for q in p.model.parameters() if q.requires_grad], lr=LR, weight_decay=0.0)
    groups_sparse, groups_shaped, steps = [], [], []
    t0 = time.time()
    for step in range(STEPS):
        batch = [tasks[(step * TASKS_PER_STEP + k) % len(tasks)] for k in range(TASKS_PER_STEP)]
        eps, groups = [], []
        for g, t in enumerate(batch):
            group = rollouts(client, p, t, GROUP, 100 * step + g)  # the same seeds for both estimators
            eps += group
            groups += [g] * len(group)
            scored = [e for e in group if not e.masked]
            groups_shaped.append([e.reward for e in scored])
            groups_sparse.append([1.0 if e.outcome == "passed" else 0.0 for e in scored])
        res = policy_update(p, opt, eps, groups, cfg, step, ",".join(Path(t).name for t in batch))
        scored = [e for e in eps if not e.masked]
        row = {"step": step, "reward": sum(e.reward for e in scored) / max(1, len(scored)), "pass": sum(e.outcome == "passed" for e in scored) / max(1, len(scored)), "grad_norm": res.grad_norm, "zero_adv_groups": res.zero_adv_groups, "groups": res.groups, "masked": len(eps) - len(scored), "skipped": res.skipped}
        steps.append(row)
        say(f"{algorithm} step {step}: reward {row['reward']:.3f}, pass {row['pass']:.2f}, grad norm {res.grad_norm:.3f}, zero-advantage groups {res.zero_adv_groups}/{res.groups}{' (' + res.skipped + ')' if res.skipped else ''}")
    return {"policy": p, "wall_sec": time.time() - t0, "steps": steps, "sparse": groups_sparse, "shaped": groups_shaped}


def zero_frac(groups: list[list[float]]) -> float:
    return sum(1 for g in groups if all_equal(g)) / max(1, len(groups))


def to_gguf(policy: Policy, out: Path, name: str) -> Path:
    ckpt = save_checkpoint(policy, out / name, 0, TinyConfig(), {})
    return export(ckpt, out / f"{name}.gguf", dtype="f16")


def tbrl_eval(gguf: Path, tasks: list[str], work: Path, name: str) -> dict:
    """`tbrl serve` on the GGUF, `tbrl eval` against it; results.json's overall figures."""
    cwd = work / f"eval-{name}"
    (cwd / ".tbrl").mkdir(parents=True, exist_ok=True)
    (cwd / ".tbrl" / "config.json").write_text(json.dumps({"promptVersion": "compact-v1", "temperature": TEMPERATURE, "maxTokensPerTurn": MAX_NEW}), encoding="utf-8")
    serve = subprocess.Popen([*TBRL, "serve", "--model-path", str(gguf), "--port", str(PORT)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd)
    try:
        first = json.loads(serve.stdout.readline())
        assert first.get("event") == "listening", first
        job = cwd / "job"
        t0 = time.time()
        r = subprocess.run([*TBRL, "eval", *tasks, "--attempts", str(EVAL_ATTEMPTS), "--concurrency", "1", "--max-steps", str(MAX_TURNS), "--timeout-multiplier", E("TBRL_BENCH_TIMEOUT_MULTIPLIER", "5"), "--base-url", first["baseUrl"], "--model", str(first["model"]), "--job-dir", str(job), "--json"], cwd=cwd, capture_output=True, text=True)
        if not (job / "results.json").is_file():
            raise SystemExit(f"tbrl eval of {name} wrote no results (exit {r.returncode}):\n{r.stderr[-2000:]}")
        res = json.loads((job / "results.json").read_text())
        o = res["overall"]
        return {"pass_at_1": o.get("passAt1"), "mean_reward": o.get("meanReward"), "eval_sec": time.time() - t0, "job": str(job), "outcomes": o.get("outcomes")}
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def oracle_turns(task_dir: str) -> list[str]:
    code = "import { loadTask } from './src/core/tasks/load'; import { oracleTurns } from './src/core/agent/oracle'; loadTask(process.argv[1]).then((t) => console.log(JSON.stringify(oracleTurns(t).turns)));"
    out = subprocess.run([str(REPO / "node_modules" / ".bin" / "tsx"), "-e", code, task_dir], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def tev_tasks(tev_dir: Path) -> list[str]:
    tasks = sorted(str(d) for d in tev_dir.iterdir() if (d / "tests" / "progress.json").is_file())[:TEV_TASKS]
    if not tasks:
        raise SystemExit(f"no Tev task (tests/progress.json) under {tev_dir}")
    return tasks


def tev_model_groups(client, policy: Policy, tasks: list[str]) -> dict:
    """One group of the start policy per Tev task: sparse (pass) vs PPRS (the env-server's reward)."""
    out = {"sparse": [], "pprs": []}
    for i, t in enumerate(tasks):
        scored = [e for e in rollouts(client, policy, t, TEV_GROUP, 7000 + i) if not e.masked]
        out["pprs"].append([e.reward for e in scored])
        out["sparse"].append([1.0 if e.outcome == "passed" else 0.0 for e in scored])
        say(f"tev {Path(t).name}: start policy rewards {out['pprs'][-1]}")
    return out


def tev_partial_oracle_groups(client, tasks: list[str]) -> dict:
    """One group per Tev task of the reference solution cut after a random number of its steps."""
    out = {"sparse": [], "pprs": [], "phi": [], "cuts": []}
    for i, t in enumerate(tasks):
        turns = oracle_turns(t)
        rng = random.Random(f"tev-{i}")
        sparse, pprs, phis, cuts = [], [], [], []
        for _ in range(TEV_GROUP):
            cut = rng.randrange(0, len(turns) + 1)
            client.reset(t, maxSteps=len(turns) + 1)
            s = {"done": False, "info": {}}
            for a in turns[:cut]:
                s = client.step(a)
                if s.get("done"):
                    break
            if not s.get("done"):
                s = client.evaluate("max-steps")
            rec = s.get("info", {}).get("rewardRecord") or {}
            pp = rec.get("pprs") or {}
            pprs.append(float(s.get("reward", 0.0)))
            sparse.append(1.0 if pp.get("pass", rec.get("tests") == 1) else 0.0)
            phis.append(pp.get("phi"))
            cuts.append(cut)
            client.call("close")
            say(f"tev {Path(t).name}: partial oracle {cut}/{len(turns)} steps -> reward {pprs[-1]:.3f} (Φ {pp.get('phi')}, pass {bool(sparse[-1])})")
        for k, v in (("sparse", sparse), ("pprs", pprs), ("phi", phis), ("cuts", cuts)):
            out[k].append(v)
    return out


def tev_part(tev_dir: Path) -> None:
    """Runs alone (TBRL_BENCH_PART=tev): the partial-oracle groups need no model."""
    t0 = time.time()
    with EnvServerClient(TBRL, timeout=900) as client:
        client.initialize()
        g = tev_partial_oracle_groups(client, tev_tasks(tev_dir))
    load = os.getloadavg()
    print(f"\nzero-advantage groups, Tev data-eng unit, partial oracle ({len(g['sparse'])} groups x {TEV_GROUP}; load {load[0]:.1f}, {time.time() - t0:.0f} s): sparse {zero_frac(g['sparse']):.2f}, PPRS {zero_frac(g['pprs']):.2f}")
    print(json.dumps({"tev_partial_oracle": g, "load": load}))


def main():
    # TBRL_BENCH_WORK keeps the tasks and each policy's GGUF (written as soon as it is trained), so
    # TBRL_BENCH_PART=eval can evaluate them again, or after a run that ran out of time.
    work = Path(E("TBRL_BENCH_WORK") or tempfile.mkdtemp(prefix="tbrl-train-bench-"))
    part = E("TBRL_BENCH_PART", "all")
    train_tasks = [str(d) for d in write_family(work / "train", TRAIN_SEEDS)]
    eval_seeds = held_out_seeds(int(E("TBRL_BENCH_EVAL_TASKS", "4")))
    eval_tasks = [str(d) for d in write_family(work / "eval", eval_seeds)]
    tev_dir = Path(E("TBRL_BENCH_TEV_DIR", str(work / "tev")))
    if not tev_dir.is_dir():
        say("synthesising Tev tasks (tbrl synth --domain data-eng --tier unit)")
        subprocess.run([*TBRL, "synth", "--domain", "data-eng", "--tier", "unit", "--seed", "1", "--count", str(TEV_TASKS), str(tev_dir)], cwd=REPO, check=True, capture_output=True)
    if part == "tev":
        return tev_part(tev_dir)
    if part == "eval":
        for name in ("base", "start", "grpo", "depgpo"):
            gguf = default_model_path() if name == "base" else work / "models" / f"{name}.gguf"
            if gguf.is_file():
                r = tbrl_eval(gguf, eval_tasks, work, name)
                say(f"eval {name}: pass@1 {r['pass_at_1']}, mean reward {r['mean_reward']}, {r['eval_sec']:.0f} s")
        return None
    t_all = time.time()
    torch.manual_seed(0)
    base = load_policy(default_model_path(), 0)
    say(f"base loaded; train seeds {TRAIN_SEEDS}, held-out seeds {eval_seeds} ({[word_for(s) for s in eval_seeds]})")
    with EnvServerClient(TBRL, timeout=900) as client:
        client.initialize()
        t0 = time.time()
        oracle = oracle_episodes(client, base, train_tasks)
        start = Policy(copy.deepcopy(base.model), base.tokenizer, base.path)
        train_top_layers(start.model, TRAIN_LAYERS)
        sft_loss = sft(start, oracle)
        sft_sec = time.time() - t0
        say(f"warm start: {SFT_STEPS} SFT steps on {len(oracle)} oracle episodes, final NLL {sft_loss:.3f}, {sft_sec:.0f} s")
        ggufs = {"base": default_model_path(), "start": to_gguf(start, work / "models", "start")}
        runs = {}
        for algo in ("grpo", "depgpo"):
            runs[algo] = train(client, start, train_tasks, algo)
            ggufs[algo] = to_gguf(runs[algo]["policy"], work / "models", algo)
        tev = {"model": tev_model_groups(client, start, tev_tasks(tev_dir))}
        if part == "all":
            tev["partial_oracle"] = tev_partial_oracle_groups(client, tev_tasks(tev_dir))
    rows = {}
    for name in ("base", "start", "grpo", "depgpo"):
        rows[name] = tbrl_eval(ggufs[name], eval_tasks, work, name)
        say(f"eval {name}: pass@1 {rows[name]['pass_at_1']}, mean reward {rows[name]['mean_reward']}, {rows[name]['eval_sec']:.0f} s")

    load = os.getloadavg()
    print(f"\ncpu-tiny learning benchmark, SmolLM2-135M on echo-word (load average {load[0]:.1f} on {os.cpu_count()} cores, total {time.time() - t_all:.0f} s)")
    print(f"start = base + {SFT_STEPS} SFT steps (lr {SFT_LR}) on {len(oracle)} oracle episodes of the training seeds ({sft_sec:.0f} s); RL: {STEPS} steps x {TASKS_PER_STEP} tasks x {GROUP} rollouts x <= {MAX_TURNS} turns of <= {MAX_NEW} tokens, lr {LR}, temperature {TEMPERATURE}, {'full fine-tuning' if not TRAIN_LAYERS else f'last {TRAIN_LAYERS} layers'}")
    print(f"eval: tbrl serve + tbrl eval, {len(eval_tasks)} held-out tasks x {EVAL_ATTEMPTS} attempts, compact-v1 prompt")
    print("| policy | pass@1 | mean reward | RL steps | RL wall time |")
    print("|---|---|---|---|---|")
    for name in ("base", "start", "grpo", "depgpo"):
        r = rows[name]
        steps = STEPS if name in runs else 0
        wall = f"{runs[name]['wall_sec']:.0f} s" if name in runs else "-"
        fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        print(f"| {name} | {fmt(r['pass_at_1'])} | {fmt(r['mean_reward'])} | {steps} | {wall} |")
    for algo in ("grpo", "depgpo"):
        print(f"{algo} per step: " + "; ".join(f"{s['step']}: reward {s['reward']:.3f} pass {s['pass']:.2f} zero-adv {s['zero_adv_groups']}/{s['groups']}" for s in runs[algo]["steps"]))
    both = runs["grpo"]["sparse"] + runs["depgpo"]["sparse"], runs["grpo"]["shaped"] + runs["depgpo"]["shaped"]
    print(f"zero-advantage groups, echo-word RL rollouts ({len(both[0])} groups): sparse (pass 1/0) {zero_frac(both[0]):.2f}, weighted tests {zero_frac(both[1]):.2f}")
    for who in tev:
        g = tev[who]
        print(f"zero-advantage groups, Tev data-eng unit, {who.replace('_', ' ')} ({len(g['sparse'])} groups x {TEV_GROUP}): sparse {zero_frac(g['sparse']):.2f}, PPRS {zero_frac(g['pprs']):.2f}")
    print(json.dumps({"rows": rows, "runs": {a: {k: v for k, v in r.items() if k != "policy"} for a, r in runs.items()}, "tev": tev, "sft_sec": sft_sec, "load": load}, default=str))


if __name__ == "__main__":
    main()
