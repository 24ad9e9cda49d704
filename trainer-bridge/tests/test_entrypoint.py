"""The entrypoint on a bundle built by the real ``tbrl train bundle`` (no cluster needed)."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tbrl_bridge.bundle import BundleError, load_bundle
from tbrl_bridge.entrypoint import load_secrets_file, main
from tbrl_bridge.presets import agent_loop_yaml, hydra_overrides, load_presets, merge_overrides

REPO = Path(__file__).resolve().parents[2]
TBRL = [str(REPO / "node_modules" / ".bin" / "tsx"), str(REPO / "src" / "cli" / "main.ts")]
VECTOR = json.loads((REPO / "test" / "vectors" / "depgpo" / "02-indirect-credit.json").read_text())


def write_trajectory(path: Path, reward: float, run_id: str) -> None:
    """A trajectory.jsonl whose commands and traces are vector 02's input (as the TS fixtures do)."""
    inp = VECTOR["input"]
    lines = [{"type": "header", "schema": "tbrl.trajectory/1.0", "runId": run_id, "startedAt": "2026-01-01T00:00:00.000Z",
              "task": {"id": "vector-task", "dir": "/tasks/vector-task", "format": "terminal-bench", "instruction": inp["instruction"]},
              "policy": {"kind": "model"}, "config": {}, "versions": {"tbrl": "0.1.0", "node": "v20"},
              "sandbox": {"image": "x", "tracing": {"available": True}}}]
    for t, tokens in enumerate(inp["stepTokens"]):
        cmds = [c for c in inp["commands"] if c["step"] == t]
        actions = [{"kind": "bash", "input": {"cmd": c["text"]}, "observation": "", "ok": True, "durationMs": 1, **({"trace": c["trace"]} if "trace" in c else {})} for c in cmds]
        lines.append({"type": "step", "index": t, "startedAt": "2026-01-01T00:00:00.000Z", "durationMs": 1,
                      "candidates": [{"text": "x", "completionTokens": tokens, "parses": True}], "chosenText": "x",
                      "actions": actions, "parseErrors": [], "usage": {"promptTokens": 1, "completionTokens": tokens}, "todos": [], "scratchpad": []})
    lines.append({"type": "footer", "endedAt": "2026-01-01T00:01:00.000Z", "endReason": "finished", "steps": len(inp["stepTokens"]),
                  "reward": {"tests": reward, "weights": {"tests": 1, "judge": 0}, "total": reward}, "verifierTrace": inp["verifier"],
                  "usage": {"promptTokens": 1, "completionTokens": 1, "verifierCalls": 0, "verifierOutputTokens": 0}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture(scope="module")
def bundle_zip(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundle")
    runs = []
    for i, r in enumerate(VECTOR["group"]["rewards"]):
        write_trajectory(d / f"run-{i}" / "trajectory.jsonl", r, f"run-{i}")
        runs.append(str(d / f"run-{i}"))
    out = d / "bundle.zip"
    p = subprocess.run([*TBRL, "train", "bundle", "--preset", "dryrun", "--algorithm", "depgpo", "--tasks", str(REPO / "examples" / "hello-world"), "--trajectories", ",".join(runs), "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "gcs://_ray_pkg_" in p.stdout
    return out


def unpack(zip_path: Path, dest: Path) -> Path:
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(dest)
    return dest


def run_entry(root: Path, preset="dryrun", algorithm="depgpo", env_extra=None, capsys=None):
    env_backup = dict(os.environ)
    os.environ.pop("TBRL_CLI", None)
    os.environ["PATH"] = os.path.dirname(sys.executable)  # no tbrl on PATH: the episode is skipped with a reason
    os.environ.update(env_extra or {})
    try:
        code = main(["--preset", preset, "--algorithm", algorithm, "--bundle", str(root)])
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    return code


def test_dryrun_validates_checks_advantages_and_writes_metrics(bundle_zip, tmp_path, capsys):
    root = unpack(bundle_zip, tmp_path / "b")
    assert run_entry(root) == 0
    out = capsys.readouterr().out
    assert "bundle ok:" in out and "max |python - typescript| = 0" in out
    assert "env episode skipped: no TBRL_CLI and no tbrl on PATH" in out
    records = [json.loads(l) for l in (root / "metrics" / "metrics.jsonl").read_text().splitlines()]
    step0 = next(r for r in records if r.get("step") == 0)
    assert step0["reward/mean"] == 0.5
    assert step0["reward/pass_rate"] == pytest.approx(1 / 3)
    assert step0["depgpo/factor_spread"] == 1.75
    assert records[-1] == {"event": "end", "code": 0}
    rows = [json.loads(l) for l in (root / "data" / "train.jsonl").read_text().splitlines()]
    assert rows[0]["reward_model"]["ground_truth"] == "hello-world"
    import pyarrow.parquet as pq

    table = pq.read_table(root / "data" / "train.parquet")
    assert table.num_rows == 1
    assert set(["data_source", "prompt", "reward_model", "extra_info"]) <= set(table.column_names)
    assert json.loads(table.column("extra_info")[0].as_py()["task"])["id"] == "hello-world"


def test_a_tampered_file_fails_the_bundle_check(bundle_zip, tmp_path, capsys):
    root = unpack(bundle_zip, tmp_path / "b")
    traj = sorted((root / "trajectories").iterdir())[0]
    traj.write_text(traj.read_text().replace("summarize", "summarise"))
    with pytest.raises(BundleError, match="do not match the manifest"):
        load_bundle(root)
    assert run_entry(root) == 1
    assert "FAILED: BundleError" in capsys.readouterr().out


def test_advantages_that_disagree_with_python_fail_loudly(bundle_zip, tmp_path, capsys):
    root = unpack(bundle_zip, tmp_path / "b")
    adv_path = root / "advantages.json"
    adv = json.loads(adv_path.read_text())
    adv["trajectories"][1]["steps"][1]["advantage"] += 0.01
    adv_path.write_text(json.dumps(adv))
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"]["advantages.json"] = hashlib.sha256(adv_path.read_bytes()).hexdigest()
    (root / "manifest.json").write_text(json.dumps(manifest))
    assert run_entry(root) == 1
    out = capsys.readouterr().out
    assert "disagrees with the bundle's advantages by 0.01" in out


def test_gpu_preset_without_verl_says_what_to_install(bundle_zip, tmp_path, capsys, monkeypatch):
    root = unpack(bundle_zip, tmp_path / "b")
    monkeypatch.setitem(sys.modules, "verl", None)  # a node without verl (import raises ImportError)
    assert run_entry(root, preset="prod_32b_8_gpus") == 1
    out = capsys.readouterr().out
    assert "trains with verl, which is not importable on this node" in out
    assert "pip install verl==0.9.1" in out
    assert "--preset dryrun" in out


def test_secrets_come_from_a_file_on_the_node(tmp_path, capsys):
    f = tmp_path / "secrets.env"
    f.write_text("# node secrets\nexport WANDB_API_KEY='abc123'\nHF_TOKEN=hf_x\n")
    env = {"TBRL_SECRETS_FILE": str(f), "HF_TOKEN": "already-set"}
    assert load_secrets_file(env) == ["WANDB_API_KEY", "HF_TOKEN"]
    assert env["WANDB_API_KEY"] == "abc123"
    assert env["HF_TOKEN"] == "already-set", "the node's own environment wins"


def test_presets_follow_terminal_bench_rl():
    presets = load_presets()
    assert {"dryrun", "test_8b_2_gpus", "prod_32b_8_gpus"} <= set(presets)
    ov = hydra_overrides(presets["prod_32b_8_gpus"], "/data", "depgpo")
    assert "algorithm.adv_estimator=depgpo" in ov
    assert "actor_rollout_ref.actor.optim.lr=1e-06" in ov
    assert "actor_rollout_ref.rollout.n=12" in ov
    assert "actor_rollout_ref.rollout.temperature=1.2" in ov
    assert "actor_rollout_ref.actor.clip_ratio_high=0.28" in ov
    assert "data.max_response_length=26768" in ov
    assert "trainer.n_gpus_per_node=8" in ov
    assert "actor_rollout_ref.rollout.agent.default_agent_loop=tbrl_env" in ov
    assert "max_turns: 100" in agent_loop_yaml(presets["prod_32b_8_gpus"], "/bundle")
    assert "algorithm.adv_estimator=grpo" in hydra_overrides(presets["test_8b_2_gpus"], "/d", "grpo")


def test_user_overrides_replace_preset_keys():
    merged = merge_overrides(["a.lr=1e-6", "b.n=4", "c=1"], ["a.lr=5e-7", "+d.x=2"])
    assert merged == ["b.n=4", "c=1", "a.lr=5e-7", "+d.x=2"]
