/**
 * Every error a user can meet names its cause and the fix. `code` is stable so front ends
 * (CLI exit codes, editor notifications, trajectory footers) can branch on it.
 */
export class TbrlError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly fix?: string,
    options?: { cause?: unknown },
  ) {
    super(fix ? `${message}\n  Fix: ${fix}` : message, options);
    this.name = new.target.name;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
