/**
 * Parsers for verifier answers. Models decorate their answers (markdown bold, "Candidate B",
 * JSON), so each parser looks for the LAST labelled line first, then simpler forms, and returns
 * undefined rather than guessing — the caller falls back and records why.
 */

const strip = (s: string) => s.replace(/[*_`#]/g, '');

function lastMatch(text: string, re: RegExp): RegExpExecArray | undefined {
  let m: RegExpExecArray | null;
  let last: RegExpExecArray | undefined;
  const g = new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g');
  while ((m = g.exec(text)) !== null) last = m;
  return last;
}

function jsonField(text: string, field: string): unknown {
  const m = lastMatch(text, /\{[^{}]*\}/);
  if (!m) return undefined;
  try {
    return (JSON.parse(m[0]) as Record<string, unknown>)[field];
  } catch {
    return undefined;
  }
}

/** Listwise: labels best first. Unmentioned labels are appended in their original order. */
export function parseRanking(text: string, labels: string[]): string[] | undefined {
  const t = strip(text);
  let listed: string[] = [];
  const line = lastMatch(t, /ranking\s*[:=]\s*([^\n]+)/i);
  if (line) listed = line[1].toUpperCase().match(/\b[A-Z]\b/g) ?? [];
  else {
    const j = jsonField(t, 'ranking');
    if (Array.isArray(j)) listed = j.map((x) => String(x).replace(/candidate\s*/i, '').trim().toUpperCase());
    else {
      const bare = lastMatch(t, /^\s*([A-Z](?:\s*[>,]\s*[A-Z])+)\s*$/m);
      if (bare) listed = bare[1].match(/[A-Z]/g) ?? [];
    }
  }
  const seen = new Set<string>();
  const ranked = listed.filter((l) => labels.includes(l) && !seen.has(l) && seen.add(l));
  if (ranked.length === 0) return undefined;
  return [...ranked, ...labels.filter((l) => !seen.has(l))];
}

/** Pointwise: a score in [0, 10]. */
export function parseScore(text: string): number | undefined {
  const t = strip(text);
  const m = lastMatch(t, /score\s*[:=]\s*(-?\d+(?:\.\d+)?)/i);
  let v = m ? Number(m[1]) : undefined;
  if (v === undefined) {
    const j = jsonField(t, 'score');
    if (typeof j === 'number' || (typeof j === 'string' && j.trim() !== '')) v = Number(j);
  }
  if (v === undefined || !Number.isFinite(v)) return undefined;
  return Math.min(10, Math.max(0, v));
}

/** Pairwise: winner A/B (or a tie) and a margin level 1–3 (2 when the model omits it). */
export function parsePairwise(text: string): { winner: 'A' | 'B' | 'tie'; margin: 1 | 2 | 3 } | undefined {
  const t = strip(text);
  const w = lastMatch(t, /winner\s*[:=]\s*(?:candidate\s*)?(A|B|tie)\b/i);
  let winner = w?.[1];
  if (!winner) {
    const j = jsonField(t, 'winner');
    if (typeof j === 'string') winner = j.replace(/candidate\s*/i, '').trim();
  }
  if (!winner) return undefined;
  const up = winner.toUpperCase();
  if (up !== 'A' && up !== 'B' && up !== 'TIE') return undefined;
  const mm = lastMatch(t, /margin\s*[:=]\s*([123])\b/i);
  const jm = mm ? undefined : jsonField(t, 'margin');
  const level = Number(mm?.[1] ?? jm ?? 2);
  const margin = (level === 1 || level === 3 ? level : 2) as 1 | 2 | 3;
  return { winner: up === 'TIE' ? 'tie' : (up as 'A' | 'B'), margin };
}

/** Decision-only: one letter among `labels`. */
export function parseDecision(text: string, labels: string[]): string | undefined {
  const t = strip(text).trim();
  const bare = /^(?:candidate\s*)?([A-Z])\s*[).:]?$/i.exec(t) ?? /^([A-Z])[).:]\s/.exec(t);
  if (bare && labels.includes(bare[1].toUpperCase())) return bare[1].toUpperCase();
  const labelled = lastMatch(t, /(?:answer|choice|decision|winner|best)\s*[:=]?\s*(?:candidate\s*)?([A-Z])\b/i);
  if (labelled && labels.includes(labelled[1].toUpperCase())) return labelled[1].toUpperCase();
  const lone = [...new Set(t.match(/\b[A-Z]\b/g) ?? [])].filter((l) => labels.includes(l));
  return lone.length === 1 ? lone[0] : undefined;
}
