"""The tiny policy: SmolLM2-135M-Instruct loaded from the studio's GGUF into transformers (fp32 on CPU).

Everything model-side of the cpu-tiny preset lives here: finding the model (one path, shared with
`tbrl serve` and scripts/fetch-model.sh), sampling turns, and the per-token log-probabilities and
entropies the policy loss needs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class PolicyError(RuntimeError):
    """A model that cannot be used; the message says why and how to fix it."""


def default_model_path(env: Optional[dict] = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("TBRL_MODEL_DIR") or str(Path(env.get("HOME", str(Path.home()))) / ".cache" / "tbrl" / "models")
    return Path(base) / MODEL_FILE


def check_model_path(path: Path) -> Path:
    if not path.is_file():
        raise PolicyError(
            f"the model file {path} does not exist on this node. Fix: run `bash scripts/fetch-model.sh` "
            "(or `bash scripts/setup.sh`) on the node, set TBRL_MODEL_DIR to the folder that holds "
            f"{MODEL_FILE}, or pass +tbrl.model=/path/to/model.gguf"
        )
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise PolicyError(f"{path} is not a GGUF file (it starts with {magic!r}). Fix: point +tbrl.model at a .gguf file, e.g. the one scripts/fetch-model.sh installs")
    return path


@dataclass
class Policy:
    model: "object"
    tokenizer: "object"
    path: Path


def load_policy(path: Path, seed: int = 0) -> Policy:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = check_model_path(Path(path))
    torch.manual_seed(seed)
    try:
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    except Exception as err:
        raise PolicyError(f"transformers could not load {path} ({type(err).__name__}: {err}). Fix: check that it is a llama-architecture GGUF and that `gguf` is installed in the training Python") from err
    use_turn_end_as_eos(tok)
    model.train()
    return Policy(model, tok, path)


def use_turn_end_as_eos(tok) -> None:
    """Sampling stops at the chat template's end of turn. transformers reads SmolLM2's GGUF with eos =
    <|im_start|>, so a sampled turn ran on past <|im_end|> into the next header; with <|im_end|> as
    eos a turn ends where the template ends it and the observation follows as the template renders it."""
    end = "<|im_end|>"
    template = getattr(tok, "chat_template", None) or ""
    if end in template and tok.convert_tokens_to_ids(end) not in (None, tok.unk_token_id) and tok.eos_token != end:
        tok.eos_token = end
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token


def train_top_layers(model, n: int) -> int:
    """Freezes all but the last n decoder layers and the final norm (n = 0: everything trains).
    Backpropagation then stops at the first trainable layer: on two CPU cores that is the difference
    between seconds and minutes per update. Returns the number of trainable parameters."""
    if n > 0:
        layers = model.model.layers
        for p in model.parameters():
            p.requires_grad_(False)
        for layer in list(layers)[-n:]:
            for p in layer.parameters():
                p.requires_grad_(True)
        for p in model.model.norm.parameters():
            p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def chat_prefix(tokenizer, messages: list[dict]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def sample(policy: Policy, prompt_ids: list[int], n: int, max_new_tokens: int, temperature: float, top_p: float) -> list[list[int]]:
    """n sampled continuations of one prompt, each ending at (and including) the end-of-turn token."""
    import torch

    model, tok = policy.model, policy.tokenizer
    model.eval()
    with torch.no_grad():
        inp = torch.tensor([prompt_ids], dtype=torch.long)
        out = model.generate(
            inp,
            attention_mask=torch.ones_like(inp),
            do_sample=True,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
            num_return_sequences=n,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    model.train()
    res = []
    for row in out[:, len(prompt_ids):].tolist():
        ids = []
        for t in row:
            ids.append(t)
            if t == tok.eos_token_id:
                break
        # A padded tail after EOS is not part of the turn.
        res.append(ids)
    return res


def token_logprobs(model, input_ids: "object", response_len: int, with_entropy: bool = False):
    """Log-probabilities (and entropies) of the last ``response_len`` tokens of each row of input_ids."""
    import torch

    logits = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).logits
    logits = logits[:, -response_len - 1:-1, :].float()
    targets = input_ids[:, -response_len:]
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if not with_entropy:
        return logp, None
    ent = -(logp_all.exp() * logp_all).sum(-1)
    return logp, ent
