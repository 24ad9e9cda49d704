"""A trained checkpoint back to GGUF, for `tbrl serve` (node-llama-cpp) and the editor.

``python -m tbrl_bridge.gguf_export CHECKPOINT_DIR OUT.gguf``

PyPI has no llama.cpp ``convert_hf_to_gguf.py`` (the ``gguf`` package ships the reader/writer and
metadata tools only), and the checkpoint started from a GGUF anyway. So the base GGUF named in the
checkpoint's tbrl-checkpoint.json is the template: every metadata key (architecture, hyper-
parameters, tokenizer, chat template) is copied with gguf's own GGUFReader/GGUFWriter, as gguf's
gguf_new_metadata script copies it, and every tensor is replaced by the trained weight, in F32 (or
F16), with llama.cpp's q/k row permutation re-applied (transformers un-permutes it on GGUF load).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HF_TO_GGUF = [
    (r"^model\.embed_tokens\.weight$", "token_embd.weight"),
    (r"^model\.norm\.weight$", "output_norm.weight"),
    (r"^lm_head\.weight$", "output.weight"),
    (r"^model\.layers\.(\d+)\.self_attn\.q_proj\.weight$", "blk.{}.attn_q.weight"),
    (r"^model\.layers\.(\d+)\.self_attn\.k_proj\.weight$", "blk.{}.attn_k.weight"),
    (r"^model\.layers\.(\d+)\.self_attn\.v_proj\.weight$", "blk.{}.attn_v.weight"),
    (r"^model\.layers\.(\d+)\.self_attn\.o_proj\.weight$", "blk.{}.attn_output.weight"),
    (r"^model\.layers\.(\d+)\.mlp\.gate_proj\.weight$", "blk.{}.ffn_gate.weight"),
    (r"^model\.layers\.(\d+)\.mlp\.up_proj\.weight$", "blk.{}.ffn_up.weight"),
    (r"^model\.layers\.(\d+)\.mlp\.down_proj\.weight$", "blk.{}.ffn_down.weight"),
    (r"^model\.layers\.(\d+)\.input_layernorm\.weight$", "blk.{}.attn_norm.weight"),
    (r"^model\.layers\.(\d+)\.post_attention_layernorm\.weight$", "blk.{}.ffn_norm.weight"),
]


class ExportError(RuntimeError):
    pass


def gguf_name(hf_name: str) -> str | None:
    for pat, out in HF_TO_GGUF:
        m = re.match(pat, hf_name)
        if m:
            return out.format(*m.groups())
    return None


def permute(w, n_head: int):
    """llama.cpp's convert_hf_to_gguf permute: HF rotary layout -> GGUF's interleaved rows."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def export(checkpoint: Path, out: Path, base_gguf: Path | None = None, dtype: str = "f32") -> Path:
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    checkpoint = Path(checkpoint)
    meta_file = checkpoint / "tbrl-checkpoint.json"
    if base_gguf is None:
        if not meta_file.is_file():
            raise ExportError(f"{checkpoint} has no tbrl-checkpoint.json naming the base GGUF. Fix: pass --base /path/to/base.gguf")
        base_gguf = Path(json.loads(meta_file.read_text(encoding="utf-8"))["base_gguf"])
    if not Path(base_gguf).is_file():
        raise ExportError(f"the base GGUF {base_gguf} is not on this machine. Fix: run scripts/fetch-model.sh, or pass --base PATH")
    shards = sorted(checkpoint.glob("*.safetensors"))
    if not shards:
        raise ExportError(f"{checkpoint} holds no .safetensors weights: is it a cpu-tiny checkpoint (step-NNNN)?")
    state: dict = {}
    for s in shards:
        state.update(load_file(str(s)))
    cfg = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    n_head, n_kv = int(cfg["num_attention_heads"]), int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    trained = {}
    for k, v in state.items():
        name = gguf_name(k)
        if name is None:
            continue
        if name.endswith("attn_q.weight"):
            v = permute(v, n_head)
        elif name.endswith("attn_k.weight"):
            v = permute(v, n_kv)
        trained[name] = v
    reader = gguf.GGUFReader(str(base_gguf))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    missing = [t.name for t in reader.tensors if t.name not in trained and not (t.name == "output.weight" and "token_embd.weight" in trained)]
    if missing:
        raise ExportError(f"the checkpoint lacks {len(missing)} tensor(s) the base GGUF has ({', '.join(missing[:5])}): it is not a fine-tune of {base_gguf.name}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    writer = gguf.GGUFWriter(str(tmp), arch=arch)
    ftype = gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        if field.name == gguf.Keys.General.FILE_TYPE:
            writer.add_key_value(field.name, int(ftype), gguf.GGUFValueType.UINT32)
            continue
        val_type = field.types[0]
        sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), val_type, sub_type=sub_type)
    for t in reader.tensors:
        w = trained.get(t.name, trained.get("token_embd.weight") if t.name == "output.weight" else None)
        # Norms and 1-D tensors stay F32, as llama.cpp's converter keeps them.
        arr = np.ascontiguousarray(w.astype(np.float16 if dtype == "f16" and w.ndim > 1 else np.float32))
        writer.add_tensor(t.name, arr)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(out)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tbrl_bridge.gguf_export")
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--base", default=None)
    ap.add_argument("--dtype", choices=["f32", "f16"], default="f16")
    a = ap.parse_args(argv)
    try:
        p = export(Path(a.checkpoint), Path(a.out), Path(a.base) if a.base else None, a.dtype)
    except ExportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {p} ({p.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
