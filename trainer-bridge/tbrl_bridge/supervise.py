"""A cpu-tiny job on a Ray cluster: the training runs in a Ray actor, the job driver watches it.

When the actor's process or node is lost mid-training (OOM killer, a preempted node, a crash), the
driver starts a new actor that resumes from the last complete checkpoint the lost one wrote (weights,
optimizer state, step; every ``tbrl.save_every`` steps), up to ``tbrl.max_restarts`` times. With no
checkpoint yet, or no restarts left, the job fails with :class:`WorkerLostError`, which says at which
checkpoint the work stopped and how to get further. Errors raised *by* the training (a bad task, a
NaN loss) are not worker losses: they fail the job at once, with their own message.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional

from .cpu_train import TinyConfig, TrainingError, latest_checkpoint
from .metrics import MetricsWriter


class WorkerLostError(TrainingError):
    """The training worker died (not a training error) and could not be resumed."""


def supervise(
    start: Callable[[Optional[Path]], Path],
    latest: Callable[[], Optional[Path]],
    is_worker_loss: Callable[[BaseException], bool],
    max_restarts: int,
    log: Callable[[str], None],
    metrics: MetricsWriter,
) -> Path:
    """Runs ``start(resume)`` until it returns; a worker loss restarts it from ``latest()``."""
    resume: Optional[Path] = None
    restarts = 0
    while True:
        try:
            return start(resume)
        except Exception as err:
            if not is_worker_loss(err):
                raise
            cause = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            cp = latest()
            metrics.event("worker-lost", restarts=restarts, cause=cause, checkpoint=str(cp) if cp else None)
            if cp is None:
                raise WorkerLostError(
                    f"the training worker was lost before it wrote any checkpoint ({type(err).__name__}: {cause}). "
                    "Fix: resubmit; pass tbrl.save_every=N so a lost worker can resume from step N, and check the node's memory (dmesg, Ray's raylet.out) if it was killed"
                ) from err
            if restarts >= max_restarts:
                raise WorkerLostError(
                    f"the training worker was lost {restarts + 1} time(s), more than tbrl.max_restarts={max_restarts} allows ({type(err).__name__}: {cause}); "
                    f"the last checkpoint is {cp}. Fix: `tbrl train fetch` still brings that checkpoint back; resubmit with a higher tbrl.max_restarts, or find why the worker dies (node memory, Ray's raylet.out)"
                ) from err
            restarts += 1
            resume = cp
            log(f"the training worker was lost ({type(err).__name__}: {cause}); restart {restarts}/{max_restarts}, resuming from {cp}")


def _ray_worker_loss(err: BaseException) -> bool:
    import ray.exceptions as rex

    return isinstance(err, (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError))


# Ray's job supervisor gives the driver its job config (runtime env, metadata) in this variable,
# whose name is literally ray._private.runtime_env.constants.RAY_JOB_CONFIG_JSON_ENV_VAR's value.
JOB_CONFIG_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def submission_id() -> Optional[str]:
    """The Ray job's submission id (metadata key job_submission_id of the driver's job config)."""
    try:
        return json.loads(os.environ.get(JOB_CONFIG_VAR, "{}")).get("metadata", {}).get("job_submission_id")
    except ValueError:
        return None


def in_ray_job() -> bool:
    return bool(os.environ.get(JOB_CONFIG_VAR))


def _actor_class():
    import ray

    @ray.remote(max_restarts=0, max_task_retries=0)
    class TinyTrainer:
        """One training run; dies with its process, and the driver decides what happens next."""

        def pid(self) -> int:
            return os.getpid()

        def train(self, cfg: dict, tasks: list[str], tbrl_cmd: list[str], out: str, metrics_path: str, resume: Optional[str]) -> str:
            from transformers.utils import logging as hf_logging

            from .cpu_train import train_tiny

            # Ray forwards every carriage-return frame of a progress bar as a log line of its own.
            hf_logging.disable_progress_bar()

            def log(msg: str) -> None:
                print(f"[tbrl-bridge] {msg}", flush=True)

            return str(train_tiny(TinyConfig(**cfg), tasks, tbrl_cmd, MetricsWriter(Path(metrics_path)), Path(out), log, resume=Path(resume) if resume else None))

    return TinyTrainer


def train_on_ray(cfg: TinyConfig, tasks: list[str], tbrl_cmd: list[str], out: Path, metrics: MetricsWriter, metrics_path: Path, log: Callable[[str], None]) -> Path:
    import ray

    # One actor prints every metric line; Ray's cross-process de-duplication would fold repeats away.
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(address="auto", log_to_driver=True, logging_level="WARNING")
    actor_cls = _actor_class()

    def start(resume: Optional[Path]) -> Path:
        # num_cpus=0: the job's entrypoint already holds the CPU the preset asks for
        # (entrypointNumCpus); the actor does that job's work. py_executable: the training venv, as
        # the driver (workers would otherwise start with the cluster's Python, without torch).
        actor = actor_cls.options(num_cpus=0, runtime_env={"py_executable": sys.executable}).remote()
        try:
            pid = ray.get(actor.pid.remote())
            log(f"training worker: Ray actor pid {pid}{f', resuming from {resume}' if resume else ''}")
            metrics.event("worker", pid=pid, resume=str(resume) if resume else None)
            try:
                return Path(ray.get(actor.train.remote(asdict(cfg), tasks, tbrl_cmd, str(out), str(metrics_path), str(resume) if resume else None)))
            except ray.exceptions.RayTaskError as err:
                # An exception of the training itself: re-raise it as itself, not wrapped in Ray's.
                raise (err.cause if isinstance(err.cause, Exception) else err) from None
        finally:
            ray.kill(actor)

    return supervise(start, lambda: latest_checkpoint(out), _ray_worker_loss, cfg.max_restarts, log, metrics)
