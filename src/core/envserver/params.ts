import { TbrlError } from '../errors';
import type { DepgpoInput } from '../depgpo/types';

/**
 * Parameter checks for `tbrl env-server`. A client is untrusted: every field is checked for type,
 * range and size before any work is sized by it, so no request can make the server allocate more
 * than the bounds below (a `credit` whose command step is 4e9 used to size arrays by it).
 */
export const PARAM_BOUNDS = {
  /** One request line (JSON text) at most. */
  maxRequestBytes: 64 * 1024 * 1024,
  /** Steps (stepTokens entries) and commands in a DepGPO input. */
  maxSteps: 100_000,
  maxCommands: 100_000,
  /** Entries in any one list of a trace (reads, writes, hunks, values...). */
  maxListItems: 100_000,
  /** A line number or line count in a hunk, and the sum of lines written over all commands. */
  maxLines: 10_000_000,
  /** One string (command text, instruction, path). */
  maxStringBytes: 4 * 1024 * 1024,
};

/** A bad parameter: answered as JSON-RPC -32602 with the field path in `data.field`. */
export class ParamError extends TbrlError {
  constructor(readonly field: string, problem: string, fix: string) {
    super('env-bad-params', `${field} ${problem}`, fix);
  }
}

const typeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)?.slice(0, 40)}`);

export function expectObject(v: unknown, field: string, fix: string): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new ParamError(field, `must be an object, got ${typeName(v)}`, fix);
  return v as Record<string, unknown>;
}

export function expectArray(v: unknown, field: string, max: number, fix: string): unknown[] {
  if (!Array.isArray(v)) throw new ParamError(field, `must be an array, got ${typeName(v)}`, fix);
  if (v.length > max) throw new ParamError(field, `has ${v.length} entries, over the bound of ${max}`, fix);
  return v;
}

export function expectString(v: unknown, field: string, fix: string, max = PARAM_BOUNDS.maxStringBytes): string {
  if (typeof v !== 'string') throw new ParamError(field, `must be a string, got ${typeName(v)}`, fix);
  if (v.length > max) throw new ParamError(field, `is ${v.length} characters, over the bound of ${max}`, fix);
  return v;
}

export function expectInt(v: unknown, field: string, min: number, max: number, fix: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new ParamError(field, `must be a whole number in [${min}, ${max}], got ${typeName(v)}`, fix);
  return v;
}

export function expectNumber(v: unknown, field: string, min: number, max: number, fix: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw new ParamError(field, `must be a finite number in [${min}, ${max}], got ${typeName(v)}`, fix);
  return v;
}

const INPUT_FIX = 'Pass a DepGPO input shaped like test/vectors/depgpo/*.json: {"commands":[{"step":0,"text":"ls","trace":{...}}],"instruction":"...","stepTokens":[10]}.';

function stringList(v: unknown, field: string): void {
  expectArray(v, field, PARAM_BOUNDS.maxListItems, INPUT_FIX).forEach((s, i) => expectString(s, `${field}[${i}]`, INPUT_FIX, 64 * 1024));
}

function portList(v: unknown, field: string): void {
  expectArray(v, field, PARAM_BOUNDS.maxListItems, INPUT_FIX).forEach((p, i) => expectInt(p, `${field}[${i}]`, 0, 65535, INPUT_FIX));
}

/** Checks a raw DepGPO input (`credit {input}`) field by field; throws ParamError naming the first bad one. */
export function checkDepgpoInput(raw: unknown, field = 'params.input'): DepgpoInput {
  const input = expectObject(raw, field, INPUT_FIX);
  const stepTokens = expectArray(input.stepTokens, `${field}.stepTokens`, PARAM_BOUNDS.maxSteps, INPUT_FIX);
  stepTokens.forEach((t, i) => expectNumber(t, `${field}.stepTokens[${i}]`, 0, 1e12, INPUT_FIX));
  expectString(input.instruction ?? '', `${field}.instruction`, INPUT_FIX);
  if (input.beta !== undefined) expectNumber(input.beta, `${field}.beta`, 0, 1, INPUT_FIX);
  if (input.tracing !== undefined) {
    const tracing = expectObject(input.tracing, `${field}.tracing`, INPUT_FIX);
    if (typeof tracing.available !== 'boolean') throw new ParamError(`${field}.tracing.available`, `must be true or false, got ${typeName(tracing.available)}`, INPUT_FIX);
  }
  if (input.verifier !== undefined) {
    const v = expectObject(input.verifier, `${field}.verifier`, INPUT_FIX);
    stringList(v.reads ?? [], `${field}.verifier.reads`);
    stringList(v.writes ?? [], `${field}.verifier.writes`);
    portList(v.ports ?? [], `${field}.verifier.ports`);
    stringList(v.processes ?? [], `${field}.verifier.processes`);
  }
  let linesTotal = 0;
  const commands = expectArray(input.commands, `${field}.commands`, PARAM_BOUNDS.maxCommands, INPUT_FIX);
  commands.forEach((c, i) => {
    const at = `${field}.commands[${i}]`;
    const command = expectObject(c, at, INPUT_FIX);
    // The step indexes stepTokens: a step beyond it would size every per-step array.
    expectInt(command.step, `${at}.step`, 0, Math.max(0, stepTokens.length - 1), INPUT_FIX);
    if (command.action !== undefined) expectInt(command.action, `${at}.action`, 0, PARAM_BOUNDS.maxListItems, INPUT_FIX);
    expectString(command.text, `${at}.text`, INPUT_FIX);
    if (command.trace === undefined) return;
    const trace = expectObject(command.trace, `${at}.trace`, INPUT_FIX);
    stringList(trace.reads, `${at}.trace.reads`);
    stringList(trace.stdoutValues, `${at}.trace.stdoutValues`);
    portList(trace.ports, `${at}.trace.ports`);
    stringList(trace.processes, `${at}.trace.processes`);
    if (trace.probedPorts !== undefined) portList(trace.probedPorts, `${at}.trace.probedPorts`);
    if (trace.inspectedProcesses !== undefined) stringList(trace.inspectedProcesses, `${at}.trace.inspectedProcesses`);
    if (trace.incomplete !== undefined) expectString(trace.incomplete, `${at}.trace.incomplete`, INPUT_FIX);
    expectArray(trace.writes, `${at}.trace.writes`, PARAM_BOUNDS.maxListItems, INPUT_FIX).forEach((w, j) => {
      const wat = `${at}.trace.writes[${j}]`;
      const write = expectObject(w, wat, INPUT_FIX);
      expectString(write.path, `${wat}.path`, INPUT_FIX, 64 * 1024);
      linesTotal += expectInt(write.linesAfter, `${wat}.linesAfter`, 0, PARAM_BOUNDS.maxLines, INPUT_FIX);
      expectArray(write.hunks, `${wat}.hunks`, PARAM_BOUNDS.maxListItems, INPUT_FIX).forEach((h, k) => {
        const hat = `${wat}.hunks[${k}]`;
        const hunk = expectObject(h, hat, INPUT_FIX);
        for (const key of ['oldStart', 'oldLines', 'newStart', 'newLines']) expectInt(hunk[key], `${hat}.${key}`, 0, PARAM_BOUNDS.maxLines, INPUT_FIX);
        linesTotal += hunk.newLines as number;
      });
      if (linesTotal > PARAM_BOUNDS.maxLines) throw new ParamError(wat, `brings the lines written over all commands to ${linesTotal}, over the bound of ${PARAM_BOUNDS.maxLines}`, INPUT_FIX);
    });
  });
  return input as unknown as DepgpoInput;
}
