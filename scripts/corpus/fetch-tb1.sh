#!/usr/bin/env bash
# Fetches Terminal-Bench 1.x tasks named in an id list (default scripts/corpus/tb1.txt) into DEST,
# for scripts/corpus/run.mjs. Tasks are never committed.
#
#   scripts/corpus/fetch-tb1.sh DEST [IDS_FILE]
#   TB1_SOURCE=/path/to/terminal-bench scripts/corpus/fetch-tb1.sh DEST   # a checkout or bare git dir
#
# An id list may pin its source with a line `# source: OWNER/REPO COMMIT` (tb1-datasets.txt does):
# then that repository is cloned (or TB1_SOURCE read) at that commit. Without it the original
# repository (laude-institute/terminal-bench) is sparse-cloned at HEAD. A plain id is looked up under
# original-tasks/ then tasks/ (TB1_BASES overrides); an id with a slash is a path in the source
# (`datasets/evoeval/0`), fetched into a folder named after its last two parts (`evoeval__0`).
# Ids missing from the source are listed, not fatal.
set -euo pipefail
DEST=${1:?usage: fetch-tb1.sh DEST [IDS_FILE]}
IDS=${2:-$(dirname "$0")/tb1.txt}
pinned=$(sed -n 's/^# source: *//p' "$IDS" | head -1)
pin_repo=$(echo "$pinned" | awk '{print $1}')
REV=$(echo "$pinned" | awk '{print $2}')
REV=${REV:-HEAD}
REPO_URL=${TB1_REPO_URL:-https://github.com/${pin_repo:-laude-institute/terminal-bench}}
mkdir -p "$DEST"
src=${TB1_SOURCE:-}
if [ -z "$src" ]; then
  src=$(mktemp -d /tmp/tb1-src.XXXX)
  trap 'rm -rf "$src"' EXIT
  git clone -q --bare --filter=blob:none "$REPO_URL" "$src" \
    || { echo "cannot clone $REPO_URL (no network?); set TB1_SOURCE to a local copy" >&2; exit 1; }
  git --git-dir="$src" cat-file -e "$REV^{commit}" 2>/dev/null || git --git-dir="$src" fetch -q origin "$REV"
fi
# A git directory without a work tree (a bare clone, a mirror) is read with git archive at REV; a checkout is copied.
if [ ! -d "$src/.git" ] && git --git-dir="$src" rev-parse HEAD >/dev/null 2>&1; then
  git --git-dir="$src" cat-file -e "$REV^{commit}" 2>/dev/null \
    || { echo "$src does not hold commit $REV pinned in $IDS" >&2; exit 1; }
  list() { git --git-dir="$src" ls-tree -d --name-only "$REV" "$1/" 2>/dev/null; }
  copy() { git --git-dir="$src" archive "$REV" "$1" | tar -x -C "$DEST/.tmp" && mv "$DEST/.tmp/$1" "$DEST/$2"; }
else
  list() { [ -d "$src/$1" ] && (cd "$src" && ls -d "$1"/*/ | sed 's:/$::'); }
  copy() { cp -r "$src/$1" "$DEST/$2"; }
fi
missing=()
while read -r id; do
  id=${id%%#*}; id=$(echo "$id" | tr -d '[:space:]')
  [ -n "$id" ] || continue
  if [[ $id == */* ]]; then name=$(basename "$(dirname "$id")")__$(basename "$id"); bases=$(dirname "$id"); leaf=$(basename "$id")
  else name=$id; bases=${TB1_BASES:-original-tasks tasks}; leaf=$id; fi
  [ -e "$DEST/$name" ] && continue
  mkdir -p "$DEST/.tmp"
  found=""
  for base in $bases; do
    # grep -q would close the pipe early and, under pipefail, fail a long listing: read it all.
    if list "$base" | grep -x "$base/$leaf" >/dev/null; then copy "$base/$leaf" "$name"; found=1; break; fi
  done
  rm -rf "$DEST/.tmp"
  [ -n "$found" ] || missing+=("$id")
done < "$IDS"
echo "fetched $(find "$DEST" -mindepth 1 -maxdepth 1 -type d | wc -l) task(s) into $DEST"
[ ${#missing[@]} -eq 0 ] || echo "not in the source: ${missing[*]}" >&2
