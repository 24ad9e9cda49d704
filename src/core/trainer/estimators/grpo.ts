import type { AdvantageExport } from '../../depgpo/credit';
import type { EstimatorImpl } from './types';

/** GRPO: every step gets its trajectory's group advantage (f_t = 1, Z = 1, no DepGPO fallback to report). */
export const GRPO: EstimatorImpl<'grpo'> = {
  id: 'grpo',
  advantages(credit: AdvantageExport): AdvantageExport {
    return {
      ...credit,
      trajectories: credit.trajectories.map((t) => {
        const { fallback: _fallback, ...rest } = t;
        return { ...rest, z: 1, steps: t.steps.map((s) => ({ ...s, factor: 1, advantage: t.groupAdvantage })) };
      }),
    };
  },
};
