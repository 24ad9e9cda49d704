"""Ray job entrypoint: ``python -m tbrl_bridge.entrypoint --preset P --algorithm A`` (A: an entry of algorithms.json).

Runs in the job's working directory (the unpacked bundle). Secrets are never in the job: they are
read from the node's environment, or from the file named by TBRL_SECRETS_FILE on the node.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Optional

from . import __version__
from .advantage import check_advantage_export, register_with_verl
from .algorithms import algorithm_names, default_algorithm
from .bundle import BundleError, convert_dataset, load_bundle
from .envclient import EnvServerClient, EnvServerError, find_tbrl_command
from .metrics import MetricsWriter
from .presets import hydra_overrides, load_presets, merge_overrides

# Recomputed advantages must agree with the TypeScript ones to this tolerance (same formulas, doubles).
ADVANTAGE_TOLERANCE = 1e-9
DRYRUN_PROBE = "<bash>\ncmd: echo tbrl-dryrun-probe | tee /tmp/tbrl-dryrun-probe && pwd\n</bash>"
DRYRUN_FINISH = "<finish>\nmessage: dryrun episode done\n</finish>"


def log(msg: str) -> None:
    print(f"[tbrl-bridge] {msg}", flush=True)


def load_secrets_file(env: dict) -> list[str]:
    """KEY=VALUE lines from TBRL_SECRETS_FILE (on the node) into the environment; returns the keys."""
    path = env.get("TBRL_SECRETS_FILE")
    if not path:
        return []
    keys = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        k = k.strip().removeprefix("export ").strip()
        env.setdefault(k, v.strip().strip('"').strip("'"))
        keys.append(k)
    return keys


def docker_available() -> tuple[bool, str]:
    if not shutil.which("docker") and not Path("/var/run/docker.sock").exists() and not os.environ.get("DOCKER_HOST"):
        return False, "no Docker on this node (no docker CLI, no /var/run/docker.sock, no DOCKER_HOST)"
    return True, "docker available"


def env_episode(bundle_root: Path, task_dir: str, metrics: MetricsWriter) -> Optional[dict]:
    cmd, how = find_tbrl_command()
    if cmd is None:
        log(f"env episode skipped: {how}")
        metrics.event("env-episode-skipped", reason=how)
        return None
    if not shutil.which("node") and not os.path.isabs(cmd[0]):
        reason = "node is not on PATH on this node"
        log(f"env episode skipped: {reason}")
        metrics.event("env-episode-skipped", reason=reason)
        return None
    ok, why = docker_available()
    if not ok:
        log(f"env episode skipped: {why}")
        metrics.event("env-episode-skipped", reason=why)
        return None
    log(f"env episode on {task_dir} through {' '.join(cmd)} env-server ({how})")
    started = time.time()
    with EnvServerClient(cmd, timeout=600) as client:
        info = client.initialize()
        log(f"env-server {info.get('version')} protocol {info.get('protocol')}")
        r = client.reset(str(bundle_root / task_dir), maxSteps=3)
        log(f"reset: {len(r['observation'])} characters of observation, image {r.get('info', {}).get('image')}")
        s1 = client.step(DRYRUN_PROBE)
        probe_ok = "tbrl-dryrun-probe" in s1["observation"]
        log(f"step 0: done={s1['done']} probe echoed={probe_ok}")
        s2 = s1 if s1["done"] else client.step(DRYRUN_FINISH)
        credit = client.credit()
        client.close_episode()
    result = {
        "reward": float(s2.get("reward", 0.0)),
        "done": bool(s2.get("done")),
        "steps": 2 if s2 is not s1 else 1,
        "probe_ok": probe_ok,
        "factors": credit.get("factors", []),
        "seconds": round(time.time() - started, 2),
    }
    metrics.event("env-episode", **result)
    log(f"env episode: reward {result['reward']:.3f}, done {result['done']}, factors {result['factors']}, {result['seconds']} s")
    if not probe_ok:
        raise RuntimeError(f"the env-server episode did not echo the probe; observation was:\n{s1['observation'][:800]}")
    return result


def dryrun(root: Path, algorithm: str, metrics: MetricsWriter, hold_sec: float) -> int:
    bundle = load_bundle(root)
    m = bundle.manifest
    log(f"bundle ok: {len(m.get('files', {}))} files, {len(bundle.tasks)} task(s), {len(bundle.trajectories)} trajectory(ies), tbrl {m['versions']['tbrl']}, bridge {__version__}")
    metrics.event("bundle-ok", files=len(m.get("files", {})), tasks=len(bundle.tasks), trajectories=len(bundle.trajectories))
    if m.get("algorithm") != algorithm:
        raise BundleError(f"the bundle was built for {m.get('algorithm')} but the job runs {algorithm}")

    parquet, note = convert_dataset(bundle)
    log(f"dataset: {note}")

    check = check_advantage_export(bundle.advantages(), algorithm)
    log(f"advantages: {len(check.trajectories)} trajectory(ies) in {check.groups} group(s), max |python - typescript| = {check.max_abs_diff:.3g}")
    if check.max_abs_diff > ADVANTAGE_TOLERANCE:
        raise RuntimeError(f"the Python {algorithm} estimator disagrees with the bundle's advantages by {check.max_abs_diff:.3g} (> {ADVANTAGE_TOLERANCE}); the trainer would not train what the editor showed")
    rewards = [t.get("reward", 0.0) for t in bundle.trajectories if "reward" in t]
    # One "training step" over the uploaded batch: the same keys a GPU run reports per step.
    summary = {"depgpo/max_abs_diff": check.max_abs_diff}
    if rewards:
        summary["reward/mean"] = sum(rewards) / len(rewards)
        summary["reward/pass_rate"] = sum(1 for r in rewards if r >= 1) / len(rewards)
    if check.trajectories:
        summary["depgpo/factor_spread"] = sum(t.spread for t in check.trajectories) / len(check.trajectories)
    metrics.step(0, **summary)
    for i, t in enumerate(check.trajectories):
        metrics.event("trajectory-credit", index=i, path=t.path, steps=t.steps, factor_spread=t.spread, fallback=t.fallback)

    why_not_verl = register_with_verl()
    log(f"estimators registered with verl ({', '.join(algorithm_names())})" if why_not_verl is None else f"verl registration skipped: {why_not_verl} (plain-Python estimator in use)")

    if bundle.tasks:
        env_episode(root, bundle.tasks[0]["dir"], metrics)
    else:
        log("env episode skipped: the bundle has no task")
        metrics.event("env-episode-skipped", reason="no task in the bundle")

    if hold_sec > 0:
        # For checking stop/cancel paths on a real cluster: a job that stays RUNNING.
        log(f"holding for {hold_sec:g} s (tbrl.dryrun.hold_sec)")
        end = time.time() + hold_sec
        while time.time() < end:
            time.sleep(min(1.0, end - time.time()))
    log("dryrun finished")
    return 0


def training_python_missing() -> Optional[str]:
    """Why torch/verl/transformers cannot be imported by this Python, or None."""
    for mod in ("torch", "transformers", "verl.trainer.ppo.core_algos", "gguf"):
        try:
            __import__(mod)
        except Exception as err:
            return f"{mod} ({type(err).__name__}: {err})"
    return None


def checkpoint_root(root: Path) -> Path:
    """TBRL_CHECKPOINT_DIR on the node, else ~/.cache/tbrl/checkpoints; then the Ray job's submission id
    (two jobs of one bundle, e.g. `--tag` re-runs, must not resume from each other's checkpoints), or
    outside a Ray job the package dir's name."""
    from .supervise import submission_id

    base = os.environ.get("TBRL_CHECKPOINT_DIR") or str(Path.home() / ".cache" / "tbrl" / "checkpoints")
    return Path(base) / (submission_id() or root.name)


def train_cpu(root: Path, preset_name: str, preset: dict, algorithm: str, extra: list[str], metrics: MetricsWriter) -> int:
    from .cpu_train import tiny_config

    bundle = load_bundle(root)
    cfg = tiny_config(preset, extra, algorithm)  # a bad setting fails here, before anything loads
    missing = training_python_missing()
    if missing:
        alt = os.environ.get("TBRL_TRAIN_PYTHON")
        if alt and Path(alt).resolve() != Path(sys.executable).resolve() and not os.environ.get("TBRL_REEXEC"):
            log(f"{missing} is not importable by {sys.executable}; re-running under TBRL_TRAIN_PYTHON={alt}")
            os.environ["TBRL_REEXEC"] = "1"
            os.execv(alt, [alt, "-m", "tbrl_bridge.entrypoint", *sys.argv[1:]])
        raise RuntimeError(
            f"preset {preset_name} needs torch, transformers, verl and gguf, and {sys.executable} cannot import {missing}. "
            "Fix: bash scripts/setup.sh makes .venv/train; submit with --python /path/to/.venv/train/bin/python "
            "or set TBRL_TRAIN_PYTHON to it in the Ray nodes' environment"
        )
    from .cpu_train import train_tiny
    from .policy import check_model_path, default_model_path
    from .supervise import in_ray_job, train_on_ray
    from .tiny_tasks import write_family

    check_model_path(Path(cfg.model) if cfg.model else default_model_path())
    cmd, how = find_tbrl_command()
    if cmd is None:
        raise RuntimeError(f"preset {preset_name} drives tbrl env-server and {how}")
    ok, why = docker_available()
    if not ok:
        raise RuntimeError(f"preset {preset_name} runs episodes in Docker and {why}. Fix: run the job on a node with Docker")
    if bundle.tasks:
        tasks = [str(root / t["dir"]) for t in bundle.tasks]
        log(f"training on the bundle's {len(tasks)} task(s)")
    else:
        tasks = [str(d) for d in write_family(root / "echo-word", cfg.family_seeds)]
        log(f"no task in the bundle: training on the echo-word family, seeds {cfg.family_seeds}")
    out = checkpoint_root(root)
    log(f"cpu-tiny {algorithm}: {cfg.steps} step(s) x {cfg.tasks_per_step} task(s) x {cfg.group_size} rollouts, lr {cfg.lr}, checkpoints in {out}")
    metrics.event("train-launch", preset=preset_name, algorithm=algorithm, engine="cpu", checkpoints=str(out))
    if in_ray_job():
        # In a Ray actor the driver supervises: a lost worker resumes from the last checkpoint.
        train_on_ray(cfg, tasks, cmd, out, metrics, metrics.path or root / "metrics" / "metrics.jsonl", log)
    else:
        train_tiny(cfg, tasks, cmd, metrics, out, log)
    return 0


def train(root: Path, preset_name: str, preset: dict, algorithm: str, extra: list[str], metrics: MetricsWriter) -> int:
    if preset.get("engine") == "cpu":
        return train_cpu(root, preset_name, preset, algorithm, extra, metrics)
    bundle = load_bundle(root)
    try:
        import verl  # noqa: F401
    except Exception as err:
        raise RuntimeError(
            f"preset {preset_name} trains with verl, which is not importable on this node ({type(err).__name__}: {err}). "
            "Install it in the Python the Ray nodes run (pip install verl==0.9.1 vllm, or verl's images), "
            "or use --preset dryrun / cpu-tiny on a CPU-only cluster."
        )
    parquet, note = convert_dataset(bundle)
    if parquet is None:
        raise RuntimeError(f"cannot write the training parquet: {note}")
    from .presets import agent_loop_yaml
    from .verl_main import run as run_verl

    loop_cfg = root / "tbrl_agent_loop.yaml"
    loop_cfg.write_text(agent_loop_yaml(preset, str(root)), encoding="utf-8")
    overrides = merge_overrides(hydra_overrides(preset, str(parquet.parent), algorithm, str(loop_cfg)), extra)
    log("launching verl (main_ppo, tbrl_env agent loop) with:\n  " + "\n  ".join(overrides))
    metrics.event("train-launch", preset=preset_name, algorithm=algorithm, overrides=len(overrides))
    # Every Ray worker (rollout workers import the agent loop) finds tbrl_bridge in the working dir.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(root), os.environ.get("PYTHONPATH", "")] if p)
    os.environ["TBRL_ALGORITHM"] = algorithm
    os.environ["TBRL_BUNDLE_ROOT"] = str(root)
    run_verl(overrides)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="tbrl_bridge.entrypoint")
    ap.add_argument("--preset", required=True)
    ap.add_argument("--algorithm", choices=algorithm_names(), default=default_algorithm())
    ap.add_argument("--bundle", default=".", help="the unpacked bundle (Ray's working_dir is the cwd)")
    args = ap.parse_args(argv)
    root = Path(args.bundle).resolve()
    metrics = MetricsWriter(root / "metrics" / "metrics.jsonl")
    try:
        presets = load_presets()
        if args.preset not in presets:
            raise RuntimeError(f"unknown preset {args.preset!r}; known: {', '.join(presets)}")
        secret_keys = load_secrets_file(os.environ)  # type: ignore[arg-type]
        if secret_keys:
            log(f"loaded {len(secret_keys)} secret(s) from TBRL_SECRETS_FILE: {', '.join(secret_keys)}")
        ov = json.loads((root / "overrides.json").read_text(encoding="utf-8")) if (root / "overrides.json").is_file() else {"overrides": []}
        user_overrides = list(ov.get("overrides", []))
        hold = 0.0
        rest = []
        for o in user_overrides:
            key, _, value = o.lstrip("+~").partition("=")
            if key == "tbrl.dryrun.hold_sec":
                hold = float(value)
            else:
                rest.append(o)
        log(f"preset {args.preset} ({presets[args.preset]['description']}), algorithm {args.algorithm}")
        metrics.event("start", preset=args.preset, algorithm=args.algorithm, bridge=__version__)
        if args.preset == "dryrun":
            code = dryrun(root, args.algorithm, metrics, hold)
        else:
            code = train(root, args.preset, presets[args.preset], args.algorithm, rest, metrics)
        metrics.event("end", code=code)
        return code
    except Exception as err:
        log(f"FAILED: {type(err).__name__}: {err}")
        traceback.print_exc(file=sys.stdout)
        metrics.event("error", kind=type(err).__name__, message=str(err))
        return 1


if __name__ == "__main__":
    sys.exit(main())
