"""GRPO: one group-relative advantage per trajectory, every step's factor 1.

verl ships ``grpo`` itself, so this module registers nothing (``VERL_FN = None``); the CPU engine
runs it as the DepGPO estimator with every factor 1, which is the same formula.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..advantage import StepFactors

VERL_FN = None


def step_factors(step_scores: Sequence[float], step_tokens: Sequence[Any]) -> StepFactors:
    """What the bundle's advantages.json must carry per step for this estimator: f_t = 1, Z = 1."""
    return StepFactors([1.0] * len(step_scores), 1.0)
