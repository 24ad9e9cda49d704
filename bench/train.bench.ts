// cpu-tiny learning benchmark (issue 19): trains SmolLM2-135M with GRPO and with DepGPO from the same
// start and seeds, evaluates base vs both on held-out echo-word tasks; the work is bench/train_bench.py
// in the training venv (.venv/train, scripts/setup.sh). TBRL_BENCH_STEPS / _GROUP / _EVAL_SAMPLES size it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const repo = join(__dirname, '..');
const python = process.env.TBRL_TRAIN_PYTHON ?? join(repo, '.venv', 'train', 'bin', 'python');
if (!existsSync(python)) {
  console.error(`no training Python at ${python}: run bash scripts/setup.sh (it makes .venv/train)`);
  process.exit(1);
}
const r = spawnSync(python, [join(__dirname, 'train_bench.py')], { stdio: 'inherit' });
process.exit(r.status ?? 1);
