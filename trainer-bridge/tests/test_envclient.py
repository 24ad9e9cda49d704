"""The Python client against the real ``tbrl env-server`` (TypeScript through tsx, real Docker)."""

import json
import subprocess
from pathlib import Path

import pytest

from tbrl_bridge.envclient import EnvServerClient, EnvServerError, find_tbrl_command
from tbrl_bridge.rllm_env import TbrlEnv

REPO = Path(__file__).resolve().parents[2]
TBRL = [str(REPO / "node_modules" / ".bin" / "tsx"), str(REPO / "src" / "cli" / "main.ts")]
VECTORS = sorted((REPO / "test" / "vectors" / "depgpo").glob("*.json"))


def make_task(root: Path) -> Path:
    d = root / "py-tiny"
    (d / "tests").mkdir(parents=True)
    (d / "task.toml").write_text('schema_version = "1.1"\n\n[task]\nname = "fixtures/py-tiny"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n[environment]\ndocker_image = "tbrl-standin/python:3"\n')
    (d / "instruction.md").write_text("Write ok into /app/result.txt.\n")
    test = d / "tests" / "test.sh"
    test.write_text("#!/bin/bash\nmkdir -p /logs/verifier\nif grep -qx ok /app/result.txt 2>/dev/null; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n")
    test.chmod(0o755)
    return d


def containers(run_id: str) -> list:
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=dev.tbrl.run={run_id}"], capture_output=True, text=True, check=True).stdout
    return out.split()


@pytest.fixture(scope="module")
def client():
    c = EnvServerClient(TBRL, cwd=str(REPO), timeout=300)
    yield c
    c.close()
    assert c.proc.returncode == 0, c.stderr_tail()


def test_initialize_lists_the_methods(client):
    info = client.initialize()
    assert info["server"] == "tbrl env-server"
    assert info["protocol"] == 1
    assert {"reset", "step", "evaluate", "close", "credit"} <= set(info["methods"])


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_credit_over_the_wire_reproduces_the_shared_vectors(client, path):
    v = json.loads(path.read_text())
    grp = v["group"]
    from tbrl_bridge.advantage import group_advantages

    a_i = group_advantages(grp["rewards"], grp.get("normalizeStd", True))[grp["index"]]
    r = client.credit(input=v["input"], groupAdvantage=a_i)
    exp = v["expected"]
    assert r["stepScores"] == pytest.approx(exp["stepScores"], abs=1e-12)
    assert r["factors"] == pytest.approx(exp["factors"], abs=1e-12)
    assert r["z"] == pytest.approx(exp["z"], abs=1e-12)
    assert r["advantages"] == pytest.approx(exp["stepAdvantages"], abs=1e-12)
    assert ("fallback" in r) == exp["fallback"]


def test_errors_carry_code_and_fix(client):
    with pytest.raises(EnvServerError) as e:
        client.step("<bash>\ncmd: ls\n</bash>")
    assert e.value.data["code"] == "env-no-episode"
    assert "reset" in e.value.data["fix"]
    with pytest.raises(EnvServerError) as e:
        client.call("teleport")
    assert e.value.code == -32601
    with pytest.raises(EnvServerError) as e:
        client.reset("/nonexistent/task")
    assert e.value.data["code"] == "TASK_NOT_FOUND"


def test_an_episode_through_the_rllm_env_class(client, tmp_path):
    task = make_task(tmp_path)
    env = TbrlEnv(str(task), max_steps=5, client=client)
    obs, info = env.reset()
    run_id = info["runId"]
    assert "Write ok into /app/result.txt." in obs
    assert info["taskId"] == "py-tiny"
    assert containers(run_id), "reset started the task's container"
    obs, reward, done, info = env.step("I will look first.\n<bash>\ncmd: mkdir -p /app && echo ok > /app/result.txt && cat /app/result.txt\n</bash>")
    assert not done and reward == 0.0
    assert "ok" in obs and info["actions"][0]["kind"] == "bash" and info["actions"][0]["exitCode"] == 0
    obs, reward, done, info = env.step("<bash>\ncmd: ls /nope\n</bash>")
    assert info["actions"][0]["exitCode"] != 0 and not done
    obs, reward, done, info = env.step("<finish>\nmessage: written\n</finish>")
    assert done and info["endReason"] == "finished"
    assert reward == 1.0, info
    credit = env.credit(group_advantage=0.5)
    assert len(credit["factors"]) == 3
    # Token-weighted mean of the per-step advantages is the group advantage.
    w = credit["stepTokens"]
    assert sum(a * n for a, n in zip(credit["advantages"], w)) / sum(w) == pytest.approx(0.5)
    with pytest.raises(EnvServerError) as e:
        env.step("<bash>\ncmd: ls\n</bash>")
    assert e.value.data["code"] == "env-episode-done"
    env.close()
    assert containers(run_id) == [], "close removed the container"


def test_evaluate_scores_a_cut_short_episode(client, tmp_path):
    task = make_task(tmp_path)
    env = TbrlEnv(str(task), max_steps=10, client=client)
    env.reset()
    _, reward, done, _ = env.step("<bash>\ncmd: mkdir -p /app && echo ok > /app/result.txt\n</bash>")
    assert not done and reward == 0.0
    assert env.evaluate() == 1.0
    env.close()


def test_parse_errors_come_back_as_observations(client, tmp_path):
    task = make_task(tmp_path)
    r = client.reset(str(task), maxSteps=2, skipReward=True)
    assert r["messages"][0]["role"] == "system"
    s = client.step("<bash>\ncmd: [unclosed\n</bash>")
    assert s["info"]["parseErrors"] == 1
    assert "cmd" in s["observation"]
    s = client.step("<bash>\ncmd: echo second\n</bash>")
    assert s["done"] and s["info"]["endReason"] == "max-steps" and s["reward"] == 0.0
    assert client.close_episode() == {"closed": True}
    assert client.close_episode() == {"closed": False}


def test_find_command_prefers_tbrl_cli():
    cmd, how = find_tbrl_command({"TBRL_CLI": "node '/opt/my tbrl/cli.js'", "PATH": ""})
    assert cmd == ["node", "/opt/my tbrl/cli.js"] and how == "TBRL_CLI"
    cmd, how = find_tbrl_command({"PATH": "/nonexistent"})
    assert cmd is None and "TBRL_CLI" in how


def test_a_dead_server_is_reported_with_its_stderr():
    c = EnvServerClient(["node", "-e", "console.error('boom from server'); process.exit(3)", "--"], timeout=30)
    with pytest.raises(EnvServerError) as e:
        c.initialize()
    assert "boom from server" in str(e.value) or "code 3" in str(e.value)
    c.close()
