"""DepGPO: GRPO's group advantage scaled per step by f_t / Z from the dependency graph.

The formulas live in advantage.py (checked number for number against src/core/depgpo/factors.ts);
this module names them for the registry.
"""

from __future__ import annotations

from ..advantage import compute_depgpo_outcome_advantage, step_factors

VERL_FN = compute_depgpo_outcome_advantage

__all__ = ["VERL_FN", "step_factors"]
