import { TbrlError } from '../errors';

/**
 * A job's runtime_env and metadata are readable by anyone who can open the cluster dashboard, and the
 * bundle sits in the cluster's object store. Secrets therefore never travel with a job: the trainer
 * reads them on the cluster side (the node's environment or a secrets file, see trainer-bridge/README.md).
 * This module finds values that must not be sent.
 */
// Whole name segments, so TOKENIZERS_PARALLELISM, max_tokens or GIT_AUTHOR_NAME are not secrets.
const SECRET_SEGMENT = /(^|[_.-])(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|AUTH|APIKEY|PRIVATE_?KEY|ACCESS_?KEY|API_?KEY|SECRET_?KEY)([_.-]|$)/i;
const SECRET_SUFFIX = /(API_?KEY|SECRET|TOKEN|PASSWORD)$/i;
/** Shapes of common provider keys, for values that arrive under innocent names. */
const SECRET_SHAPES = [/\bsk-[A-Za-z0-9_-]{16,}/, /\bhf_[A-Za-z0-9]{20,}/, /\bgh[pousr]_[A-Za-z0-9]{20,}/, /\bxox[abp]-[A-Za-z0-9-]{10,}/, /\bAKIA[0-9A-Z]{16}\b/];
const MIN_SECRET_LENGTH = 8;

export function isSecretName(name: string): boolean {
  return SECRET_SEGMENT.test(name) || SECRET_SUFFIX.test(name);
}

/** Values of secret-named variables in an environment (what could leak by accident). */
export function secretValuesFromEnv(env: NodeJS.ProcessEnv, extra: Array<string | undefined> = []): string[] {
  const values = new Set<string>();
  for (const [k, v] of Object.entries(env)) if (v && v.length >= MIN_SECRET_LENGTH && isSecretName(k)) values.add(v);
  for (const v of extra) if (v && v.length >= MIN_SECRET_LENGTH) values.add(v);
  return [...values];
}

export interface SecretFinding {
  where: string;
  reason: string;
}

/** Looks through text for known secret values and key shapes. Reasons never quote the secret. */
export function scanText(where: string, text: string, secrets: readonly string[]): SecretFinding[] {
  const out: SecretFinding[] = [];
  for (const s of secrets) if (text.includes(s)) out.push({ where, reason: `holds the value of a secret (${s.length} characters, starting ${JSON.stringify(s.slice(0, 3))}…)` });
  for (const re of SECRET_SHAPES) if (re.test(text)) out.push({ where, reason: `holds something shaped like a provider key (${re.source})` });
  return out;
}

/** Keys of a plain object tree whose names say they hold secrets. */
export function secretNamedKeys(where: string, value: unknown, path = ''): SecretFinding[] {
  const out: SecretFinding[] = [];
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const p = path ? `${path}.${k}` : k;
      if (isSecretName(k) && v !== '' && v !== null && v !== undefined) out.push({ where, reason: `sets "${p}", a secret-looking name` });
      out.push(...secretNamedKeys(where, v, p));
    }
  }
  return out;
}

export function refuseSecrets(findings: SecretFinding[]): void {
  if (findings.length === 0) return;
  const list = findings.slice(0, 8).map((f) => `  - ${f.where} ${f.reason}`).join('\n');
  throw new TbrlError(
    'secret-in-job',
    `Refusing to submit: a secret would be sent with the job, where anyone with dashboard access can read it:\n${list}`,
    'Keep secrets on the cluster: set them in the Ray nodes\' environment (e.g. WANDB_API_KEY before `ray start`) or in a file named by TBRL_SECRETS_FILE on the nodes (see trainer-bridge/README.md). Remove them from --override/--env and from the uploaded trajectories.',
  );
}
