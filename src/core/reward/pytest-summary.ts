/**
 * Reads pytest's console output: the `-rA` short test summary (primary) and, for tests the summary
 * cannot name (skips are listed by file:line, not node id), the `-v` progress lines.
 */
export type PytestStatus = 'passed' | 'failed' | 'error' | 'skipped' | 'xfail' | 'xpass';

export interface PytestResult {
  /** Full node id as pytest printed it, e.g. `tests/test_outputs.py::TestX::test_y[a-b]`. */
  nodeId: string;
  status: PytestStatus;
  message?: string;
}

export interface PytestParse {
  /** A `short test summary info` section was present. */
  summaryFound: boolean;
  /** The closing `N passed, M failed in Xs` line was present (pytest ran to the end). */
  finalLineFound: boolean;
  results: PytestResult[];
}

/** Terminal-Bench semantics: skipped and expected failures do not count against the agent. */
export function statusPasses(status: PytestStatus): boolean {
  return status === 'passed' || status === 'xfail' || status === 'skipped';
}

const STATUS_WORDS: Record<string, PytestStatus> = {
  PASSED: 'passed', FAILED: 'failed', ERROR: 'error', SKIPPED: 'skipped', XFAIL: 'xfail', XPASS: 'xpass',
};

// When one node id is reported twice (a passing call whose teardown errors shows as PASSED and
// ERROR), the worse status is the truth.
const SEVERITY: Record<PytestStatus, number> = { passed: 0, skipped: 1, xfail: 1, xpass: 2, failed: 3, error: 4 };

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g;
const SECTION_RULE = /^=+ (.*?) =+$/;
const SUMMARY_TITLE = /short test summary info/i;
const FINAL_LINE = /^=+ .*\b(passed|failed|error|errors|skipped|xfailed|xpassed|deselected|no tests ran)\b.* in [\d.]+s.*=+$/;

/**
 * A node id as the task's author knows it: pytest names files relative to its rootdir, so tests
 * copied to /tests and run from /app read `../tests/test_outputs.py::test_x` (or `/tests/...`).
 * Files under `testDir` (the container's copy of the task's tests) are named under `taskTestsDir`
 * (where they live in the task, e.g. `tests`); other ids are kept.
 */
export function taskRelativeNodeId(nodeId: string, testDir: string, taskTestsDir = 'tests'): string {
  const cut = nodeId.indexOf('::');
  const file = cut < 0 ? nodeId : nodeId.slice(0, cut);
  const rest = cut < 0 ? '' : nodeId.slice(cut);
  if (!file.startsWith('../') && !file.startsWith('/')) return nodeId;
  const bare = file.replace(/^(\.\.?\/)+/, '').replace(/^\/+/, '');
  const dir = testDir.replace(/^\/+|\/+$/g, '');
  if (dir && (bare === dir || bare.startsWith(`${dir}/`))) return `${taskTestsDir}${bare.slice(dir.length)}${rest}`;
  return nodeId;
}

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** Splits `nodeid rest` where the node id may hold spaces inside its parametrisation brackets. */
function splitNodeId(text: string): { nodeId: string; rest: string } {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '[') depth++;
    else if (ch === ']') depth = Math.max(0, depth - 1);
    else if (/\s/.test(ch) && depth === 0) return { nodeId: text.slice(0, i), rest: text.slice(i).trim() };
  }
  return { nodeId: text, rest: '' };
}

function summaryLine(line: string): PytestResult | undefined {
  const m = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(.*)$/.exec(line);
  if (!m) return undefined;
  const status = STATUS_WORDS[m[1]];
  let body = m[2];
  // `SKIPPED [2] tests/test_x.py:14: reason` names a location, not a test: the -v lines name it.
  if (/^\[\d+\]\s/.test(body)) {
    body = body.replace(/^\[\d+\]\s+/, '');
    const loc = /^(\S+?:\d+):?\s*(.*)$/.exec(body);
    return { nodeId: loc ? loc[1] : body, status, message: loc?.[2] || undefined };
  }
  const { nodeId, rest } = splitNodeId(body);
  if (!nodeId) return undefined;
  return { nodeId, status, message: rest.replace(/^-\s*/, '') || undefined };
}

/** `tests/test_x.py::test_a PASSED  [ 50%]` (pytest -v) or the xdist form `[gw0] [ 50%] PASSED tests/...`. */
function verboseLine(line: string): PytestResult | undefined {
  const plain = /^(\S*::\S.*?)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b(.*)$/.exec(line);
  if (plain) {
    const { nodeId, rest } = splitNodeId(plain[1]);
    if (!nodeId.includes('::') || rest) return undefined;
    return { nodeId, status: STATUS_WORDS[plain[2]] };
  }
  const xdist = /^\[gw\d+\]\s+\[\s*\d+%\]\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S.*)$/.exec(line);
  if (xdist) {
    const { nodeId } = splitNodeId(xdist[2]);
    if (nodeId.includes('::')) return { nodeId, status: STATUS_WORDS[xdist[1]] };
  }
  return undefined;
}

export function parsePytestOutput(output: string): PytestParse {
  const lines = stripAnsi(output).replace(/\r\n?/g, '\n').split('\n').map((l) => l.trimEnd());
  const fromSummary = new Map<string, PytestResult>();
  const fromVerbose = new Map<string, PytestResult>();
  const merge = (into: Map<string, PytestResult>, r: PytestResult) => {
    const prev = into.get(r.nodeId);
    if (!prev || SEVERITY[r.status] > SEVERITY[prev.status]) into.set(r.nodeId, prev?.message && !r.message ? { ...r, message: prev.message } : r);
  };

  let summaryFound = false;
  let finalLineFound = false;
  let inSummary = false;
  for (const line of lines) {
    const rule = SECTION_RULE.exec(line.trim());
    if (rule) {
      if (FINAL_LINE.test(line.trim())) finalLineFound = true;
      inSummary = SUMMARY_TITLE.test(rule[1]);
      if (inSummary) summaryFound = true;
      continue;
    }
    if (inSummary) {
      const r = summaryLine(line.trim());
      if (r) merge(fromSummary, r);
      continue;
    }
    const v = verboseLine(line.trim());
    if (v) merge(fromVerbose, v);
  }

  // Summary entries are authoritative; -v lines fill in only what the summary could not name.
  const results = new Map(fromSummary);
  const summarySkipsByLocation = [...fromSummary.values()].filter((r) => r.status === 'skipped' && !r.nodeId.includes('::'));
  for (const v of fromVerbose.values()) {
    if (results.has(v.nodeId)) continue;
    if (summaryFound && v.status !== 'skipped') continue;
    results.set(v.nodeId, v);
  }
  // A location-only skip that a -v line resolved to a node id is the same test counted twice.
  if (summarySkipsByLocation.length > 0 && [...fromVerbose.values()].some((v) => v.status === 'skipped')) {
    for (const s of summarySkipsByLocation) results.delete(s.nodeId);
  }
  return { summaryFound, finalLineFound, results: [...results.values()] };
}
