import { TbrlError } from '../errors';
import type { DomainSpec } from './types';
import { AI_RESEARCH } from './domains/ai-research';
import { DATA_ENGINEERING } from './domains/data-eng';
import { INFRA_OPS } from './domains/infra-ops';
import { LOG_FORENSICS } from './domains/log-forensics';
import { MATH_OR } from './domains/math-or';
import { QUANTUM } from './domains/quantum';
import { SOFTWARE_ENGINEERING } from './domains/software-eng';

export { AI_RESEARCH, DATA_ENGINEERING, INFRA_OPS, LOG_FORENSICS, MATH_OR, QUANTUM, SOFTWARE_ENGINEERING };

/** The domain registry: a new domain is one file under domains/ and one line here. */
const REGISTRY: readonly DomainSpec[] = [
  SOFTWARE_ENGINEERING,
  DATA_ENGINEERING,
  AI_RESEARCH,
  MATH_OR,
  LOG_FORENSICS,
  INFRA_OPS,
  QUANTUM,
];

export const DOMAINS: Record<string, DomainSpec> = Object.fromEntries(REGISTRY.map((d) => [d.name, d]));

export function domainByName(name: string): DomainSpec {
  const d = DOMAINS[name];
  if (!d) throw new TbrlError('SYNTH_UNKNOWN_DOMAIN', `unknown synthesis domain "${name}"`, `use one of: ${Object.keys(DOMAINS).join(', ')} (e.g. --domain data-eng).`);
  return d;
}
