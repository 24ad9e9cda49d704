import type { AdvantageExport } from '../../depgpo/credit';

/** What algorithms.json says about an estimator (shared with trainer-bridge/tbrl_bridge/algorithms.py). */
export interface AlgorithmSpec {
  description: string;
  /** The estimator used when none is asked for (exactly one entry). */
  default?: boolean;
  /** Whether advantages differ per step (the per-token factors must reach the trainer). */
  stepFactors: boolean;
  /** The name the bridge registers with verl (or verl's own estimator of that name). */
  verlEstimator: string;
}

/** The TypeScript half of an estimator: the advantages a bundle ships for the cluster to check and train on. */
export interface EstimatorImpl<Id extends string = string> {
  readonly id: Id;
  /** Per-step advantages for the bundle from the DepGPO credit export of its trajectories (grouped by task). */
  advantages(credit: AdvantageExport): AdvantageExport;
}
