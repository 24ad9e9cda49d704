"""DepGPO and GRPO advantages, number for number the same as src/core/depgpo/factors.ts.

The dependency graph and step scores are computed by the TypeScript core (``tbrl credit`` /
env-server ``credit``); this module turns step scores, step token counts and group rewards into
per-step and per-token advantages, and registers a verl advantage estimator when verl is present.
Checked against test/vectors/depgpo/*.json by tests/test_advantage.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence


@dataclass
class StepFactors:
    factors: list[float]
    z: float
    fallback: Optional[str] = None


def _format_score(s: float) -> str:
    if not math.isfinite(s):
        return str(s)
    r = round(s * 1e6) / 1e6
    # Match JavaScript's String(number): integers print without a decimal point.
    return str(int(r)) if r == int(r) else repr(r)


def _token_weight(n: Any) -> float:
    return float(n) if isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n) and n > 0 else 0.0


def step_factors(step_scores: Sequence[float], step_tokens: Sequence[Any]) -> StepFactors:
    """m = min s, f_t = (s_t - m) / mean(s - m); Z = token-weighted mean of f. Equal scores: all 1."""
    T = len(step_scores)
    if T == 0:
        return StepFactors([], 1.0)
    m = math.inf
    for s in step_scores:
        m = min(m, s)
    excess_sum = 0.0
    for s in step_scores:
        excess_sum += s - m
    mean_excess = excess_sum / T
    if not mean_excess > 0:
        return StepFactors([1.0] * T, 1.0, f"all step scores are equal ({_format_score(m)}): no step is singled out")
    factors = [(s - m) / mean_excess for s in step_scores]
    weight_sum = 0.0
    weighted = 0.0
    for t in range(T):
        n = _token_weight(step_tokens[t] if t < len(step_tokens) else None)
        weight_sum += n
        weighted += n * factors[t]
    z = weighted / weight_sum if weight_sum > 0 else sum(factors) / T
    if not z > 0:
        return StepFactors([1.0] * T, 1.0, "every generated token is in a step with factor 0, so Z = 0 and f/Z is undefined")
    return StepFactors(factors, z)


def step_advantages(factors: Sequence[float], z: float, group_advantage: float) -> list[float]:
    """A_t = (f_t / Z) * A_i."""
    return [(f / z) * group_advantage for f in factors]


def group_advantages(rewards: Sequence[float], normalize_std: bool = True) -> list[float]:
    """GRPO's (R_i - mean) / std with the sample std (n - 1), no epsilon; equal rewards or n < 2 give 0."""
    n = len(rewards)
    if n < 2:
        return [0.0 for _ in rewards]
    mean = sum(rewards) / n
    if not normalize_std:
        return [r - mean for r in rewards]
    variance = sum((r - mean) ** 2 for r in rewards) / (n - 1)
    std = math.sqrt(variance)
    return [(r - mean) / std if std > 0 else 0.0 for r in rewards]


def factor_spread(factors: Sequence[float]) -> float:
    """max f - min f: 0 when DepGPO singles out no step (the GRPO case)."""
    return (max(factors) - min(factors)) if factors else 0.0


@dataclass
class TrajectoryCheck:
    path: str
    max_abs_diff: float
    steps: int
    spread: float
    fallback: Optional[str] = None


@dataclass
class AdvantageCheck:
    trajectories: list[TrajectoryCheck] = field(default_factory=list)
    groups: int = 0

    @property
    def max_abs_diff(self) -> float:
        return max((t.max_abs_diff for t in self.trajectories), default=0.0)


def check_advantage_export(export: dict, algorithm: str) -> AdvantageCheck:
    """Recomputes every per-step advantage of a bundle's advantages.json (tbrl.advantages/1) from
    the step scores, token counts and group rewards, and reports the largest disagreement."""
    if export.get("schema") != "tbrl.advantages/1":
        raise ValueError(f"advantages.json has schema {export.get('schema')!r}, expected 'tbrl.advantages/1'")
    from .algorithms import estimator

    factors_of = estimator(algorithm).step_factors
    normalize = bool(export.get("normalizeStd", True))
    out = AdvantageCheck(groups=len(export.get("groups", [])))
    by_group: dict[str, list[dict]] = {}
    for t in export.get("trajectories", []):
        by_group.setdefault(t["group"], []).append(t)
    for key, members in by_group.items():
        adv = group_advantages([m["reward"] for m in members], normalize)
        for m, a in zip(members, adv):
            scores = [s["score"] for s in m["steps"]]
            tokens = [s["tokens"] for s in m["steps"]]
            sf = factors_of(scores, tokens)
            expected = step_advantages(sf.factors, sf.z, a)
            diffs = [abs(a - m["groupAdvantage"])]
            diffs += [abs(e - s["advantage"]) for e, s in zip(expected, m["steps"])]
            diffs += [abs(f - s["factor"]) for f, s in zip(sf.factors, m["steps"])]
            if len(expected) != len(m["steps"]):
                diffs.append(math.inf)
            out.trajectories.append(TrajectoryCheck(m.get("path", ""), max(diffs), len(scores), factor_spread(sf.factors), sf.fallback))
    return out


def token_factors(step_token_counts: Sequence[int], factors: Sequence[float], z: float) -> list[float]:
    """Per-token multipliers f_t / Z laid out over a response whose step t spans step_token_counts[t] tokens."""
    out: list[float] = []
    for n, f in zip(step_token_counts, factors):
        out.extend([f / z] * int(n))
    return out


def compute_depgpo_advantage_np(scores: Sequence[float], index: Sequence[Any], token_multipliers: Sequence[Sequence[float]], response_mask: Sequence[Sequence[float]], normalize_std: bool = True) -> list[list[float]]:
    """Plain-Python DepGPO over a batch: group by ``index`` (the prompt uid), GRPO within each
    group, then scale every response token by its step's f_t / Z.

    A row whose response mask is all zero is a masked rollout (an infra outcome: the environment,
    the verifier or the model server failed, not the agent): it is left out of its group's mean and
    std and gets advantage 0, so it is never trained on as if the agent had scored 0."""
    groups: dict[Any, list[int]] = {}
    for i, k in enumerate(index):
        if any(m for m in response_mask[i]):
            groups.setdefault(k, []).append(i)
    adv = [0.0] * len(scores)
    for members in groups.values():
        for i, a in zip(members, group_advantages([scores[i] for i in members], normalize_std)):
            adv[i] = a
    return [[adv[i] * (mult[j] if j < len(mult) else 1.0) * mask[j] for j in range(len(mask))] for i, (mult, mask) in enumerate(zip(token_multipliers, response_mask))]


VERL_ESTIMATOR_NAME = "depgpo"


def register_with_verl() -> Optional[str]:
    """Registers every estimator of algorithms.json with verl's advantage-estimator registry
    (``depgpo``: compute_depgpo_outcome_advantage). Returns why not when verl is absent.

    verl's ``compute_advantage`` calls a registered estimator with token_level_rewards, response_mask,
    index and config only; ``verl_glue.install_in_verl`` wraps it so the per-token f_t / Z
    (``depgpo_token_factors``, from the agent loop's env-server ``credit``) reach this function too.
    Without them every factor is 1 and the estimator is exactly GRPO (sample std, no epsilon).
    Registering twice is a no-op (verl refuses a different function under the same name).
    """
    from .algorithms import register_all_with_verl

    return register_all_with_verl()


def compute_depgpo_outcome_advantage(token_level_rewards, response_mask, index=None, config=None, depgpo_token_factors=None, norm_adv_by_std_in_grpo=None, **kwargs):
    """verl's estimator signature over compute_depgpo_advantage_np: (advantages, returns), both [B, T]."""
    import torch

    if norm_adv_by_std_in_grpo is not None:
        normalize = bool(norm_adv_by_std_in_grpo)
    elif config is not None:
        normalize = bool(config.get("norm_adv_by_std_in_grpo", True)) if hasattr(config, "get") else bool(getattr(config, "norm_adv_by_std_in_grpo", True))
    else:
        normalize = True
    with torch.no_grad():
        scores = token_level_rewards.sum(dim=-1).tolist()
        mask = response_mask.tolist()
        keys = [k.item() if hasattr(k, "item") else k for k in index] if index is not None else [0] * len(scores)
        if depgpo_token_factors is None:
            mult = [[1.0] * len(m) for m in mask]
        elif hasattr(depgpo_token_factors, "tolist") and not isinstance(depgpo_token_factors, list):
            mult = depgpo_token_factors.tolist()
        else:
            mult = [list(row) if row is not None else [] for row in depgpo_token_factors]
        adv = compute_depgpo_advantage_np(scores, keys, mult, mask, normalize)
        advantages = torch.tensor(adv, dtype=token_level_rewards.dtype, device=token_level_rewards.device)
    return advantages, advantages


def iter_vector_checks(vector: dict) -> Iterable[tuple[str, float, float]]:
    """(what, expected, got) triples for one shared test vector; used by pytest and by the dryrun."""
    exp = vector["expected"]
    inp = vector["input"]
    sf = step_factors(exp["stepScores"], inp["stepTokens"])
    for t, (e, g) in enumerate(zip(exp["factors"], sf.factors)):
        yield (f"factors[{t}]", e, g)
    yield ("z", exp["z"], sf.z)
    yield ("fallback", 1.0 if exp["fallback"] else 0.0, 1.0 if sf.fallback else 0.0)
    grp = vector["group"]
    ga = group_advantages(grp["rewards"], grp.get("normalizeStd", True))
    for i, (e, g) in enumerate(zip(exp["groupAdvantages"], ga)):
        yield (f"groupAdvantages[{i}]", e, g)
    sa = step_advantages(sf.factors, sf.z, ga[grp["index"]])
    for t, (e, g) in enumerate(zip(exp["stepAdvantages"], sa)):
        yield (f"stepAdvantages[{t}]", e, g)
    if len(sa) != len(exp["stepAdvantages"]):
        yield ("len(stepAdvantages)", float(len(exp["stepAdvantages"])), float(len(sa)))
