"""Proof that learning happens: one real update (verl's policy loss, the studio's estimator, AdamW)
on fixed rollouts moves the policy in the direction the advantages say, and DepGPO concentrates the
change on the steps with high dependency factors."""

import contextlib

import pytest

torch = pytest.importorskip("torch", reason="needs .venv/train (bash scripts/setup.sh)")
pytest.importorskip("verl.trainer.ppo.core_algos", reason="needs .venv/train (bash scripts/setup.sh)")

from tbrl_bridge.cpu_train import TinyConfig, TrainingError, advantages_for, policy_update  # noqa: E402
from tbrl_bridge.episode import COMPACT_SYSTEM_PROMPT, Episode  # noqa: E402
from tbrl_bridge.policy import token_logprobs, train_top_layers  # noqa: E402

# The last two decoder layers train (backprop stops there): the same update rule as full fine-tuning,
# a few seconds per update on two cores instead of minutes.
TRAIN_LAYERS = 2

GOOD = "<bash>\ncmd: echo apple > /app/answer.txt\n</bash>"
BAD = "I will write a poem about apples instead."
STEP1 = "<bash>\ncmd: ls /app\n</bash>"
STEP2 = "<bash>\ncmd: echo apple > /app/answer.txt\n</bash>"


def fixed_episode(policy, turns: list[str], reward: float, factors: list[float], outcome: str = "passed") -> Episode:
    tok = policy.tokenizer
    messages = [{"role": "system", "content": COMPACT_SYSTEM_PROMPT}, {"role": "user", "content": "Write the word apple into the file /app/answer.txt."}]
    prompt = tok.encode(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True), add_special_tokens=False)
    ep = Episode("fixed", prompt_ids=prompt, reward=reward, outcome=outcome)
    for t, (text, f) in enumerate(zip(turns, factors)):
        ids = tok.encode(text, add_special_tokens=False) + [tok.eos_token_id]
        ep.response_ids += ids
        ep.response_mask += [1] * len(ids)
        ep.token_factors += [f] * len(ids)
        ep.step_tokens.append(len(ids))
        if t < len(turns) - 1:
            obs = tok.encode("\n<|im_start|>user\n<bash_output>ok</bash_output><|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
            ep.response_ids += obs
            ep.response_mask += [0] * len(obs)
            ep.token_factors += [1.0] * len(obs)
    ep.step_factors = factors
    return ep


def per_token_logp(policy, ep):
    with torch.no_grad():
        lp, _ = token_logprobs(policy.model, torch.tensor([ep.prompt_ids + ep.response_ids]), len(ep.response_ids))
    return lp[0]


@contextlib.contextmanager
def fresh(policy):
    """The shared policy with its top layers trainable; every weight is restored afterwards."""
    train_top_layers(policy.model, TRAIN_LAYERS)
    saved = {n: p.detach().clone() for n, p in policy.model.named_parameters() if p.requires_grad}
    try:
        yield policy
    finally:
        with torch.no_grad():
            for n, p in policy.model.named_parameters():
                if n in saved:
                    p.copy_(saved[n])
                p.requires_grad_(True)


def update(policy, episodes, groups, algorithm, lr=1e-5):
    cfg = TinyConfig(algorithm=algorithm, lr=lr, max_grad_norm=1e9)
    opt = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    return policy_update(policy, opt, episodes, groups, cfg, 0, "fixed")


def test_one_update_raises_positive_and_lowers_negative_completions(tiny_policy):
    torch.manual_seed(0)
    with fresh(tiny_policy) as p:
        eps = [fixed_episode(p, [GOOD], 1.0, [1.0]), fixed_episode(p, [BAD], 0.0, [1.0], "failed")]
        before = [float(per_token_logp(p, e).sum()) for e in eps]
        res = update(p, eps, [0, 0], "grpo")
        after = [float(per_token_logp(p, e).sum()) for e in eps]
    assert res.skipped is None and res.grad_norm > 0
    assert after[0] > before[0] + 0.05, (before, after)
    assert after[1] < before[1] - 0.05, (before, after)


def test_depgpo_concentrates_the_change_on_high_factor_steps(tiny_policy):
    # The same two-step rollouts under GRPO (every factor 1) and DepGPO (step 2 carries the credit).
    def run(algorithm):
        torch.manual_seed(0)
        with fresh(tiny_policy) as p:
            win = fixed_episode(p, [STEP1, STEP2], 1.0, [0.2, 1.8])
            lose = fixed_episode(p, [BAD, BAD], 0.0, [1.0, 1.0], "failed")
            before = per_token_logp(p, win)
            update(p, [win, lose], [0, 0], algorithm)
            delta = per_token_logp(p, win) - before
        mask = torch.tensor(win.response_mask, dtype=torch.bool)
        n1 = win.step_tokens[0]
        step1 = delta[:n1].mean()
        step2 = delta[mask][n1:].mean()
        return float(step1), float(step2)

    g1, g2 = run("grpo")
    d1, d2 = run("depgpo")
    assert d2 > 0 and g2 > 0
    # DepGPO moves the high-factor step more, relative to the low-factor step, than GRPO does.
    assert d2 / max(abs(d1), 1e-9) > g2 / max(abs(g1), 1e-9), ((g1, g2), (d1, d2))
    assert abs(d1) < abs(g1), ((g1, g2), (d1, d2))


def test_masked_rollouts_carry_no_advantage(tiny_policy):
    eps = [fixed_episode(tiny_policy, [GOOD], 1.0, [1.0]), fixed_episode(tiny_policy, [BAD], 0.0, [1.0], "failed"), fixed_episode(tiny_policy, [BAD], 0.0, [1.0], "environment_error")]
    adv, mask = advantages_for(eps, [0, 0, 0], "grpo")
    assert float(adv[2].abs().sum()) == 0.0 and float(mask[2].sum()) == 0.0
    # Two scored rollouts: +-0.7071 (sample std), as if the masked one did not exist.
    assert abs(float(adv[0, 0]) - 0.70710678) < 1e-6 and abs(float(adv[1, 0]) + 0.70710678) < 1e-6


def test_a_nan_loss_stops_naming_step_and_batch(tiny_policy):
    with fresh(tiny_policy) as p:
        with torch.no_grad():
            p.model.model.norm.weight.fill_(float("nan"))
        eps = [fixed_episode(p, [GOOD], 1.0, [1.0]), fixed_episode(p, [BAD], 0.0, [1.0], "failed")]
        cfg = TinyConfig(algorithm="grpo")
        opt = torch.optim.AdamW([q for q in p.model.parameters() if q.requires_grad], lr=1e-5)
        with pytest.raises(TrainingError, match=r"step 7, batch echo-word-3"):
            policy_update(p, opt, eps, [0, 0], cfg, 7, "echo-word-3")
        assert torch.isnan(p.model.model.norm.weight).all()
