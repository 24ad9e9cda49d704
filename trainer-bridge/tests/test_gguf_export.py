"""A trained checkpoint converted back to GGUF loads (through gguf + transformers, as `tbrl serve`'s
file) and computes the same logits as the trained weights, not the base model's."""

import copy
import json
import os
import subprocess
import urllib.request

import pytest

torch = pytest.importorskip("torch", reason="needs .venv/train (bash scripts/setup.sh)")
pytest.importorskip("gguf", reason="needs .venv/train (bash scripts/setup.sh)")

from tbrl_bridge.cpu_train import TinyConfig, save_checkpoint  # noqa: E402
from tbrl_bridge.gguf_export import ExportError, export  # noqa: E402
from tbrl_bridge.policy import Policy, load_policy  # noqa: E402


def test_checkpoint_to_gguf_round_trip(tiny_policy, tmp_path):
    trained = Policy(copy.deepcopy(tiny_policy.model), tiny_policy.tokenizer, tiny_policy.path)
    torch.manual_seed(1)
    with torch.no_grad():
        # Stand-in for training: a visible change in attention (q/k are permuted on the way to GGUF) and MLP.
        layer = trained.model.model.layers[3]
        for w in (layer.self_attn.q_proj.weight, layer.self_attn.k_proj.weight, layer.mlp.up_proj.weight):
            w.add_(torch.randn_like(w) * 0.05)
    ckpt = save_checkpoint(trained, tmp_path / "ckpt", 1, TinyConfig(), {})
    out = export(ckpt, tmp_path / "trained.gguf", dtype="f32")
    assert out.read_bytes()[:4] == b"GGUF"
    back = load_policy(out)
    ids = torch.tensor([tiny_policy.tokenizer.encode("Write the word apple into /app/answer.txt", add_special_tokens=False)])
    with torch.no_grad():
        want = trained.model(input_ids=ids).logits
        got = back.model(input_ids=ids).logits
        base = tiny_policy.model(input_ids=ids).logits
    assert (got - want).abs().max() < 1e-3
    assert (base - want).abs().max() > 1e-2  # the change is real, and the GGUF carries it
    assert back.tokenizer.encode("hello world") == tiny_policy.tokenizer.encode("hello world")


def test_the_exported_gguf_loads_and_generates_under_tbrl_serve(tiny_policy, tmp_path):
    """`tbrl train fetch`'s output is what the editor serves: `tbrl serve` (node-llama-cpp) loads the
    F16 GGUF the export writes and answers a chat completion with it."""
    from conftest import REPO

    trained = Policy(copy.deepcopy(tiny_policy.model), tiny_policy.tokenizer, tiny_policy.path)
    with torch.no_grad():
        layer = trained.model.model.layers[5]
        layer.mlp.down_proj.weight.add_(torch.randn_like(layer.mlp.down_proj.weight) * 0.01)
    out = export(save_checkpoint(trained, tmp_path / "ckpt", 1, TinyConfig(), {}), tmp_path / "trained.gguf", dtype="f16")
    base = os.environ.get("TBRL_RAY_PORT_BASE")
    port = int(base) + 61 if base else 0  # this session's port range when it has one, else any free port
    cmd = [str(REPO / "node_modules" / ".bin" / "tsx"), str(REPO / "src" / "cli" / "main.ts"), "serve", "--model-path", str(out), "--port", str(port), "--context-size", "512"]
    serve = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = serve.stdout.readline()
        assert line, f"tbrl serve exited ({serve.wait(timeout=30)}) without listening: {serve.stderr.read()[-2000:]}"
        first = json.loads(line)
        assert first["event"] == "listening" and first["model"], first
        body = json.dumps({"model": first["model"], "messages": [{"role": "user", "content": "Write the word apple into /app/answer.txt"}], "max_tokens": 16, "temperature": 0, "seed": 1}).encode()
        req = urllib.request.Request(first["baseUrl"] + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            answer = json.loads(r.read())
        choice = answer["choices"][0]
        assert choice["message"]["content"].strip(), answer
        assert answer["usage"]["completion_tokens"] > 0
    finally:
        serve.terminate()
        serve.wait(timeout=60)


def test_export_refuses_a_folder_without_weights(tmp_path):
    (tmp_path / "tbrl-checkpoint.json").write_text('{"base_gguf": "/nonexistent.gguf"}')
    with pytest.raises(ExportError, match="not on this machine"):
        export(tmp_path, tmp_path / "x.gguf")
