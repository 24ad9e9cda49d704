import type { EstimatorImpl } from './types';

/** DepGPO: the credit export is already the per-step advantages (src/core/depgpo/credit.ts). */
export const DEPGPO: EstimatorImpl<'depgpo'> = {
  id: 'depgpo',
  advantages: (credit) => credit,
};
