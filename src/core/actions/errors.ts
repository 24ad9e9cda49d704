/**
 * Parse errors as the agent reads them: what was wrong, the offending text quoted back (bounded),
 * and a correct example of the action it was attempting.
 */
import type { ActionParseError } from './types';
import { exampleFor } from './examples';
import { ACTION_TAGS } from './schema';
import { clipChars, wrapBounded } from './bound';

export type ParseErrorCode =
  | 'yaml-syntax'
  | 'not-a-mapping'
  | 'empty-body'
  | 'missing-field'
  | 'wrong-type'
  | 'unknown-field'
  | 'invalid-value'
  | 'missing-action'
  | 'no-action'
  | 'unknown-action'
  | 'unknown-tag'
  | 'unclosed-tag'
  | 'tag-attributes'
  | 'too-many-errors';

/** Longest excerpt quoted back; long bodies keep their start and end. */
export const MAX_EXCERPT_CHARS = 800;

const EXAMPLE_HEADING = '\n\nA correct example:\n';

export function makeParseError(opts: {
  code: ParseErrorCode;
  /** The action tag, when recognised. */
  tag?: string;
  /** The action kind the agent was most likely attempting (chooses the example). */
  kind?: string;
  problem: string;
  excerpt: string;
}): ActionParseError {
  const example = exampleFor(opts.kind ?? opts.tag ?? 'bash');
  const what = opts.tag ? `Your <${opts.tag}> action was not run: ` : '';
  return {
    code: opts.code,
    tag: opts.tag,
    excerpt: clipChars(opts.excerpt, MAX_EXCERPT_CHARS),
    example,
    message: `${what}${opts.problem}${EXAMPLE_HEADING}${example}`,
  };
}

export function unknownTagProblem(name: string, suggestion: string | undefined): string {
  const outputTag = /_output$|^(error|parse_error)$/.test(name);
  const known = ACTION_TAGS.map((t) => `<${t}>`).join(', ');
  if (outputTag) return `<${name}> is written by the environment, not by you; to act, use one of ${known}`;
  return `<${name}> is not an action tag${suggestion ? ` (did you mean <${suggestion}>?)` : ''}; the action tags are ${known}`;
}

/** The observation for a parse error: `<error>` with the problem, the quoted text and the example. */
export function formatParseError(err: ActionParseError, maxBytes: number): string {
  const at = err.message.indexOf(EXAMPLE_HEADING);
  const problem = at >= 0 ? err.message.slice(0, at) : err.message;
  const example = at >= 0 ? err.message.slice(at) : '';
  const quoted = err.excerpt ? `\n\nYou wrote:\n${err.excerpt}` : '';
  return wrapBounded('error', `${problem}${quoted}${example}`, maxBytes);
}
