"""The cpu-tiny driver's handling of a lost training worker (supervise.supervise), with a stand-in
worker; test/integration/train-cpu-tiny-resume.test.ts kills a real Ray actor mid-job."""

import io
import json
from pathlib import Path

import pytest

from tbrl_bridge.cpu_train import TrainingError, latest_checkpoint
from tbrl_bridge.metrics import MetricsWriter
from tbrl_bridge.supervise import WorkerLostError, supervise


class Lost(Exception):
    """Stands in for Ray's ActorDiedError."""


def checkpoint(out: Path, step: int) -> Path:
    d = out / f"step-{step:04d}"
    d.mkdir(parents=True)
    (d / "tbrl-checkpoint.json").write_text(json.dumps({"step": step}))
    (out / "latest").write_text(d.name + "\n")
    return d


def events(stream: io.StringIO) -> list[dict]:
    return [json.loads(line[len("tbrl-metrics "):]) for line in stream.getvalue().splitlines() if line.startswith("tbrl-metrics ") and '"event"' in line]


def run(tmp_path, behaviours, max_restarts):
    """behaviours[i](resume) is the i-th worker: it returns a checkpoint or raises."""
    calls = []
    stream = io.StringIO()

    def start(resume):
        calls.append(resume)
        return behaviours[len(calls) - 1](resume)

    result = supervise(start, lambda: latest_checkpoint(tmp_path), lambda e: isinstance(e, Lost), max_restarts, lambda m: None, MetricsWriter(None, stream))
    return result, calls, events(stream)


def test_a_lost_worker_resumes_from_the_last_complete_checkpoint(tmp_path):
    def first(resume):
        checkpoint(tmp_path, 1)
        (tmp_path / "step-0002").mkdir()  # a save the kill interrupted: no metadata, `latest` not moved
        raise Lost("The actor died unexpectedly before finishing this task")

    def second(resume):
        assert resume == tmp_path / "step-0001"
        return checkpoint(tmp_path, 3)

    result, calls, ev = run(tmp_path, [first, second], max_restarts=1)
    assert result == tmp_path / "step-0003"
    assert calls == [None, tmp_path / "step-0001"]
    assert [e["event"] for e in ev] == ["worker-lost"]
    assert ev[0]["checkpoint"] == str(tmp_path / "step-0001")


def test_a_worker_lost_more_often_than_allowed_fails_naming_the_checkpoint(tmp_path):
    def dies(resume):
        if latest_checkpoint(tmp_path) is None:
            checkpoint(tmp_path, 1)
        raise Lost("node died")

    with pytest.raises(WorkerLostError, match=r"lost 2 time\(s\), more than tbrl.max_restarts=1 .*last checkpoint is .*step-0001.*Fix:"):
        run(tmp_path, [dies, dies], max_restarts=1)


def test_a_worker_lost_before_any_checkpoint_fails_with_the_fix(tmp_path):
    def dies(resume):
        raise Lost("killed")

    with pytest.raises(WorkerLostError, match=r"before it wrote any checkpoint .*Fix: .*tbrl.save_every"):
        run(tmp_path, [dies], max_restarts=3)
    assert issubclass(WorkerLostError, TrainingError)


def test_a_training_error_is_not_retried(tmp_path):
    checkpoint(tmp_path, 1)

    def nan(resume):
        raise TrainingError("the loss is nan at step 1, batch echo-word-1")

    with pytest.raises(TrainingError, match="loss is nan at step 1"):
        run(tmp_path, [nan, nan], max_restarts=5)


def test_the_job_id_comes_from_rays_job_config(monkeypatch):
    from tbrl_bridge.supervise import in_ray_job, submission_id

    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    assert not in_ray_job() and submission_id() is None
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {}, "metadata": {"job_submission_id": "tbrl-cpu-tiny-abc", "job_name": "x"}}))
    assert in_ray_job() and submission_id() == "tbrl-cpu-tiny-abc"
