import { spawnSync } from 'node:child_process';

/**
 * Splits a simple shell script into its top-level commands, so the oracle policy can run a
 * reference solution as several steps (DepGPO needs several commands to attribute credit).
 *
 * "Simple" means the tracker below understands every construct it meets: quotes, backslash
 * continuations, heredocs, comments, and compound commands (if/for/while/until/case, { }, ( )),
 * each kept whole. Anything it cannot place, or any top-level `exit`/`exec` (which would end the
 * agent's persistent shell), returns undefined and the caller runs the script as one command.
 * When the host has bash, every piece is also checked with `bash -n`.
 *
 * Top-level `set -e`/`-u`/`-o pipefail` lines are dropped: in a persistent interactive shell they
 * would outlive the script and make the first failing command kill the agent's shell.
 */
export function splitTopLevelCommands(script: string, options: { maxCommands?: number } = {}): string[] | undefined {
  const commands: string[] = [];
  const st: ScanState = { quote: undefined, stack: [], heredocs: [], activeHeredoc: undefined };
  let current: string[] = [];

  const lines = script.replace(/\r\n/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (i === 0 && line.startsWith('#!')) continue;

    if (st.activeHeredoc) {
      current.push(line);
      const body = st.activeHeredoc.stripTabs ? line.replace(/^\t+/, '') : line;
      if (body === st.activeHeredoc.delimiter) st.activeHeredoc = st.heredocs.shift();
      if (!st.activeHeredoc && !st.quote && st.stack.length === 0 && !endsWithContinuation(current)) {
        commands.push(current.join('\n'));
        current = [];
      }
      continue;
    }

    const startedClean = current.length === 0;
    if (startedClean && /^\s*(#.*)?$/.test(line)) continue; // blank or comment between commands

    if (!scanLine(line, st)) return undefined;
    current.push(line);
    if (st.heredocs.length > 0) st.activeHeredoc = st.heredocs.shift();
    if (st.activeHeredoc || st.quote || st.stack.length > 0 || line.endsWith('\\')) continue;

    commands.push(current.join('\n'));
    current = [];
  }
  if (current.length > 0 || st.quote || st.stack.length > 0 || st.activeHeredoc) return undefined;

  const kept: string[] = [];
  for (const cmd of commands) {
    const trimmed = cmd.trim();
    if (/^set(\s+([-+][a-zA-Z]+|pipefail|errexit|nounset|xtrace))+\s*;?\s*$/.test(trimmed)) continue;
    if (/^(exit|exec|logout)\b/.test(trimmed) || /[;&|]\s*(exit|exec)\b/.test(firstLine(trimmed))) return undefined;
    kept.push(trimmed);
  }
  if (kept.length === 0 || kept.length > (options.maxCommands ?? 50)) return undefined;
  if (!kept.every(syntaxOk)) return undefined;
  return kept;
}

interface Heredoc { delimiter: string; stripTabs: boolean }

interface ScanState {
  quote: "'" | '"' | undefined;
  /** Open compound constructs: keywords (if, case, loop) and brackets. */
  stack: Array<'if' | 'case' | 'loop' | '{' | '('>;
  /** Heredocs announced on the current line, in order; their bodies start on the next line. */
  heredocs: Heredoc[];
  activeHeredoc: Heredoc | undefined;
}

const OPENERS: Record<string, 'if' | 'case' | 'loop'> = { if: 'if', case: 'case', for: 'loop', while: 'loop', until: 'loop', select: 'loop' };
const CLOSERS: Record<string, 'if' | 'case' | 'loop'> = { fi: 'if', esac: 'case', done: 'loop' };
/** Words after which the next word is in command position again. */
const LEAD_KEYWORDS = new Set(['then', 'do', 'else', 'elif', 'if', 'while', 'until', '!', 'time']);

/** Scans one line outside heredoc bodies; false when it meets something it cannot track. */
function scanLine(line: string, st: ScanState): boolean {
  let word = '';
  let wordStartsCommand = true;
  let cmdPos = true;

  const endWord = (): boolean => {
    if (word === '') return true;
    if (wordStartsCommand && cmdPos) {
      const top = st.stack[st.stack.length - 1];
      if (OPENERS[word]) st.stack.push(OPENERS[word]);
      else if (CLOSERS[word]) {
        if (top !== CLOSERS[word]) return false;
        st.stack.pop();
      } else if (word === '{') st.stack.push('{');
      else if (word === '}') {
        if (top !== '{') return false;
        st.stack.pop();
      }
      cmdPos = LEAD_KEYWORDS.has(word) || word === '{' || word === '}' || !!CLOSERS[word];
    } else {
      cmdPos = false;
    }
    word = '';
    return true;
  };

  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (st.quote === "'") {
      if (c === "'") st.quote = undefined;
      continue;
    }
    if (st.quote === '"') {
      if (c === '\\') i++;
      else if (c === '"') st.quote = undefined;
      continue;
    }
    if (c === '\\') {
      word += line.slice(i, i + 2);
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      if (word === '') wordStartsCommand = cmdPos;
      word += c;
      st.quote = c;
      continue;
    }
    if (c === '#' && word === '') break; // comment to end of line
    if (c === '<' && line[i + 1] === '<' && line[i + 2] !== '<') {
      const m = /^<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2/.exec(line.slice(i));
      if (!m) return false;
      if (!endWord()) return false;
      st.heredocs.push({ delimiter: m[3], stripTabs: m[1] === '-' });
      i += m[0].length - 1;
      continue;
    }
    if (/\s/.test(c)) {
      if (!endWord()) return false;
      continue;
    }
    if (c === ';' || c === '&' || c === '|') {
      if (!endWord()) return false;
      cmdPos = true;
      continue;
    }
    const inCase = st.stack[st.stack.length - 1] === 'case';
    if (c === '(' && !inCase) {
      if (!endWord()) return false;
      st.stack.push('(');
      cmdPos = true;
      continue;
    }
    if (c === ')' && !inCase) {
      if (!endWord()) return false;
      if (st.stack[st.stack.length - 1] !== '(') return false;
      st.stack.pop();
      // `f() {` and `(cd x) && y`: what follows a group may start a command or a body.
      cmdPos = true;
      continue;
    }
    if (c === ')' && inCase) {
      // A case pattern ends; the command after it is in command position.
      word = '';
      cmdPos = true;
      continue;
    }
    if (word === '') wordStartsCommand = cmdPos;
    word += c;
  }
  if (!endWord()) return false;
  return true;
}

function endsWithContinuation(lines: string[]): boolean {
  return lines.length > 0 && lines[lines.length - 1].endsWith('\\');
}

function firstLine(s: string): string {
  const i = s.indexOf('\n');
  return i < 0 ? s : s.slice(0, i);
}

let bashAvailable: boolean | undefined;
/**
 * `bash -n`'s verdict per command text. The check blocks the event loop (~10 ms a piece on a busy
 * machine), and an eval job splits the same solution for every trial of a task: 8 trials at once all
 * stalled behind each one's six checks. The verdict depends on the text alone, so it is asked once.
 */
const verdicts = new Map<string, boolean>();
const MAX_VERDICTS = 4096;

function syntaxOk(cmd: string): boolean {
  if (bashAvailable === false) return true;
  const known = verdicts.get(cmd);
  if (known !== undefined) return known;
  const r = spawnSync('bash', ['-n'], { input: cmd, encoding: 'utf8', timeout: 5000 });
  if (r.error) {
    bashAvailable = false;
    return true;
  }
  bashAvailable = true;
  if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
  verdicts.set(cmd, r.status === 0);
  return r.status === 0;
}
