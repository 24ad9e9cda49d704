"""One multi-turn episode through ``tbrl env-server``, laid out as token ids for training.

Shared by the cpu-tiny trainer and the verl agent loop: the env-server (the editor's own task
loading, sandbox, action parser, reward and DepGPO credit) runs the episode; this module keeps the
token bookkeeping verl's AgentLoopOutput wants (prompt ids, response ids, response mask with 0 for
observation tokens) plus the per-token DepGPO factors and the trial's outcome class.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from .advantage import step_factors
from .envclient import EnvServerClient, EnvServerError

# src/core/run/outcome.ts: only these classes are the agent's doing; the rest are masked.
SCORED_OUTCOMES = ("passed", "failed", "agent_timeout")

# cpu-tiny's system prompt: the editor's (src/core/prompts/system-v1.md, ~1,500 tokens) costs a 135M
# model on two CPU cores ~20 s of forward+backward per sample; this keeps the one action it needs.
COMPACT_SYSTEM_PROMPT = (
    "You are a terminal agent in a Linux container. Answer with exactly one action in this format:\n"
    "<bash>\ncmd: echo hello > /app/hello.txt\n</bash>"
)


def is_masked(outcome_class: str) -> bool:
    return outcome_class not in SCORED_OUTCOMES


@dataclass
class Episode:
    task_dir: str
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    # Per response token: f_t/Z of the step (turn) that generated it; 1.0 on observation tokens.
    token_factors: list[float] = field(default_factory=list)
    step_tokens: list[int] = field(default_factory=list)
    step_factors: list[float] = field(default_factory=list)
    factor_fallback: Optional[str] = None
    reward: float = 0.0
    outcome: str = "environment_error"
    cause: Optional[str] = None
    turns: list[str] = field(default_factory=list)
    seconds: float = 0.0
    generated_tokens: int = 0

    @property
    def masked(self) -> bool:
        return is_masked(self.outcome)


def outcome_from(info: dict, reward: float) -> tuple[str, Optional[str]]:
    """The env-server's own outcome when it reports one; else derived as outcomeOf(footer) does."""
    oc = info.get("outcome")
    if isinstance(oc, dict) and isinstance(oc.get("class"), str):
        return oc["class"], oc.get("cause")
    if info.get("endReason") == "error":
        return "environment_error", (info.get("endMessage") or "the episode ended with an error").splitlines()[0]
    rec = info.get("rewardRecord")
    if not isinstance(rec, dict):
        return "environment_error", "the episode ended without a reward"
    if rec.get("tests") is None and rec.get("testError"):
        err = rec["testError"]
        return "verifier_error", f"{err.get('kind', 'error')}: {str(err.get('message', '')).splitlines()[0] if err.get('message') else ''}".strip()
    if info.get("endReason") == "max-time":
        return "agent_timeout", info.get("endMessage")
    return ("passed", None) if reward >= 1 else ("failed", None)


def run_episode(
    client: EnvServerClient,
    tokenizer,
    task_dir: str,
    generate: Callable[[list[int]], list[int]],
    max_turns: int = 2,
    system_prompt: Optional[str] = None,
    max_steps: Optional[int] = None,
) -> Episode:
    """Plays one episode; ``generate(ids)`` returns the sampled turn's token ids (ending at EOS if any)."""
    started = time.time()
    ep = Episode(task_dir)
    eos = tokenizer.eos_token_id
    try:
        r = client.reset(task_dir, maxSteps=max_steps or max_turns)
    except EnvServerError as err:
        ep.outcome, ep.cause = "environment_error", f"reset failed: {err}"
        ep.seconds = time.time() - started
        return ep
    messages = [dict(m) for m in r["messages"]]
    if system_prompt is not None:
        messages[0] = {"role": "system", "content": system_prompt}
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ep.prompt_ids = tokenizer.encode(text, add_special_tokens=False)
    context = list(ep.prompt_ids)
    info: dict = {}
    done = False
    reward = 0.0
    try:
        for turn in range(max_turns):
            try:
                ids = list(generate(context))
            except Exception as err:  # the model server, not the agent
                ep.outcome, ep.cause = "model_error", f"generation failed at turn {turn}: {type(err).__name__}: {err}"
                client.call("close")
                ep.seconds = time.time() - started
                return ep
            content_ids = [t for t in ids if t != eos]
            action = tokenizer.decode(content_ids, skip_special_tokens=True)
            ep.turns.append(action)
            ep.response_ids += ids
            ep.response_mask += [1] * len(ids)
            ep.step_tokens.append(len(ids))
            ep.generated_tokens += len(ids)
            context += ids
            s = client.step(action, tokens=len(ids))
            info, reward, done = s.get("info", {}), float(s.get("reward", 0.0)), bool(s.get("done"))
            if done or turn == max_turns - 1:
                break
            # The observation joins the context as the next user message, tokenised as the chat
            # template renders it after this assistant turn.
            messages = messages + [{"role": "assistant", "content": action}, {"role": "user", "content": s["observation"]}]
            before = text + action + (tokenizer.decode([eos]) if ids and ids[-1] == eos else "")
            text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            tail = text[len(before):] if text.startswith(before) else text[len(text.rsplit(action, 1)[0]) + len(action):]
            obs_ids = tokenizer.encode(tail, add_special_tokens=False)
            ep.response_ids += obs_ids
            ep.response_mask += [0] * len(obs_ids)
            context += obs_ids
        if not done:
            e = client.call("evaluate", {"endReason": "max-steps"})
            info, reward = e.get("info", {}), float(e.get("reward", 0.0))
        credit = client.credit()
    except EnvServerError as err:
        ep.outcome, ep.cause = "environment_error", str(err).splitlines()[0]
        ep.seconds = time.time() - started
        return ep
    ep.reward = reward
    ep.outcome, ep.cause = outcome_from(info, reward)
    scores = credit.get("stepScores") or []
    if len(scores) == len(ep.step_tokens) and scores:
        sf = step_factors(scores, ep.step_tokens)
        ep.step_factors, ep.factor_fallback = [f / sf.z for f in sf.factors], sf.fallback
    else:
        ep.step_factors = [1.0] * len(ep.step_tokens)
        ep.factor_fallback = f"the env-server scored {len(scores)} step(s) for {len(ep.step_tokens)} turn(s): plain GRPO for this rollout"
    # Each run of 1s in the mask is one turn; observation tokens (0) carry factor 1 and no loss.
    ep.token_factors = []
    t = 0
    prev = 0
    for m in ep.response_mask:
        if m and prev == 0 and ep.token_factors:
            t += 1
        ep.token_factors.append(ep.step_factors[min(t, len(ep.step_factors) - 1)] if m else 1.0)
        prev = m
    client.call("close")
    ep.seconds = time.time() - started
    return ep
