"""A trained checkpoint converted back to GGUF loads (through gguf + transformers, as `tbrl serve`'s
file) and computes the same logits as the trained weights, not the base model's."""

import copy

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


def test_export_refuses_a_folder_without_weights(tmp_path):
    (tmp_path / "tbrl-checkpoint.json").write_text('{"base_gguf": "/nonexistent.gguf"}')
    with pytest.raises(ExportError, match="not on this machine"):
        export(tmp_path, tmp_path / "x.gguf")
