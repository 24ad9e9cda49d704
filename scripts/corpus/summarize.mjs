#!/usr/bin/env node
// Turns `tbrl validate --json` output into the compatibility table rows of the README: per task,
// loaded / built / reference passes / empty agent fails, and the first problem as the root cause.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/corpus/summarize.mjs validate.json');
  process.exit(2);
}
const raw = JSON.parse(readFileSync(file, 'utf8'));
const results = Array.isArray(raw) ? raw : raw.results ?? raw.tasks ?? [];
const mark = (s) => (s === 'passed' ? 'yes' : s === 'failed' ? 'no' : '-');
const oneLine = (s) => String(s ?? '').replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|').slice(0, 260);
let counts = { n: 0, loaded: 0, built: 0, oracle: 0, empty: 0 };
console.log('| Task | Loaded | Built | Reference passes | Empty agent fails | Root cause of a failure |');
console.log('|---|---|---|---|---|---|');
for (const r of results) {
  counts.n++;
  if (r.load.status === 'passed') counts.loaded++;
  if (r.build.status === 'passed') counts.built++;
  if (r.oracle.status === 'passed') counts.oracle++;
  if (r.empty.status === 'passed') counts.empty++;
  console.log(`| ${basename(r.path)} | ${mark(r.load.status)} | ${mark(r.build.status)} | ${mark(r.oracle.status)} | ${mark(r.empty.status)} | ${oneLine(r.problems[0] ?? '')} |`);
}
console.log(`\n${counts.n} tasks: ${counts.loaded} loaded, ${counts.built} built, ${counts.oracle} reference passes, ${counts.empty} empty agent fails`);
