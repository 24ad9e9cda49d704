/**
 * Scripts the Terminal-Bench 1.x harness puts next to a task's tests (the harness ships them, not
 * the task): most TB1 run-tests.sh files are `source $TEST_DIR/setup-uv-pytest.sh` then
 * `bash $TEST_DIR/run-uv-pytest.sh`. These do what the originals do (uv from astral.sh, a uv project
 * with pytest 8.4.1, `uv run pytest -rA`), except that a uv already in the image is used as it is
 * (the tbrl Python stand-in ships one) and, when `uv add` cannot reach an index, the image's own
 * pytest runs the tests, so an offline machine can still score the task.
 *
 * Every step that touches the network is bounded: an index that refuses fails fast on its own, but
 * one that is blackholed or stalls (a firewall dropping packets, a cold proxy) would let uv retry
 * for minutes and the verifier's timeout would turn a scoreable task into a verifier error. So the
 * uv installer gets UV_ADD_LIMIT_S seconds, `uv add` the same, and `uv run` never goes to the network
 * (--offline: a successful `uv add` has already installed pytest into the project's venv).
 */
export const UV_ADD_LIMIT_S = 30;

export const TB1_HARNESS_SCRIPTS: Record<string, string> = {
  'setup-uv-pytest.sh': `#!/bin/bash
# Stand-in for Terminal-Bench 1's harness script of the same name (tbrl, src/core/reward/tb1-harness.ts).
if ! command -v uv >/dev/null 2>&1; then
  curl -LsSf --max-time ${UV_ADD_LIMIT_S} https://astral.sh/uv/0.7.13/install.sh | sh
  source "$HOME/.local/bin/env"
fi
if [ "$PWD" = "/" ]; then
  echo "Error: No working directory set. Please set a WORKDIR in your Dockerfile before running this script."
  exit 1
fi
[ -f pyproject.toml ] || uv init >/dev/null 2>&1 || true
UV_HTTP_TIMEOUT=\${UV_HTTP_TIMEOUT:-10} UV_HTTP_RETRIES=\${UV_HTTP_RETRIES:-1} timeout -k 5 ${UV_ADD_LIMIT_S} uv add pytest==8.4.1 \\
  || echo "tbrl: uv add pytest failed or ran past ${UV_ADD_LIMIT_S} s (no package index, or one that does not answer?); run-uv-pytest.sh will use the image's pytest" >&2
`,
  'run-uv-pytest.sh': `#!/bin/bash
# Stand-in for Terminal-Bench 1's harness script of the same name (tbrl, src/core/reward/tb1-harness.ts).
if command -v uv >/dev/null 2>&1 && timeout -k 5 ${UV_ADD_LIMIT_S} uv run --frozen --offline pytest --version >/dev/null 2>&1; then
  uv run --frozen --offline pytest "$TEST_DIR/test_outputs.py" -rA
else
  python3 -m pytest "$TEST_DIR/test_outputs.py" -rA
fi
`,
};

/** The harness scripts a TB1 test runner calls and the task does not ship itself. */
export function tb1HarnessScriptsFor(runner: string, shipped: (name: string) => boolean): Array<{ name: string; content: string; mode: number }> {
  return Object.entries(TB1_HARNESS_SCRIPTS)
    .filter(([name]) => runner.includes(name) && !shipped(name))
    .map(([name, content]) => ({ name, content, mode: 0o755 }));
}
