#!/usr/bin/env bash
# Fetches original Terminal-Bench 1.x tasks (laude-institute/terminal-bench) named in
# scripts/corpus/tb1.txt into DEST, for scripts/corpus/run.mjs. Tasks are never committed.
#
#   scripts/corpus/fetch-tb1.sh DEST [IDS_FILE]
#   TB1_SOURCE=/path/to/terminal-bench scripts/corpus/fetch-tb1.sh DEST   # a checkout or bare git dir
#
# Without TB1_SOURCE it sparse-clones the repository from GitHub (tasks live under original-tasks/
# in current checkouts, tasks/ in older ones; TB1_BASES overrides the folders searched). Ids missing
# from the source are listed, not fatal.
set -euo pipefail
DEST=${1:?usage: fetch-tb1.sh DEST [IDS_FILE]}
IDS=${2:-$(dirname "$0")/tb1.txt}
REPO_URL=${TB1_REPO_URL:-https://github.com/laude-institute/terminal-bench}
mkdir -p "$DEST"
src=${TB1_SOURCE:-}
if [ -z "$src" ]; then
  src=$(mktemp -d /tmp/tb1-src.XXXX)
  trap 'rm -rf "$src"' EXIT
  git clone -q --depth 1 --filter=blob:none --sparse "$REPO_URL" "$src" \
    || { echo "cannot clone $REPO_URL (no network?); set TB1_SOURCE to a local copy" >&2; exit 1; }
  git -C "$src" sparse-checkout set original-tasks tasks >/dev/null
fi
# A git directory without a work tree (a bare clone, a mirror) is read with git archive; a checkout is copied.
if [ ! -d "$src/.git" ] && git --git-dir="$src" rev-parse HEAD >/dev/null 2>&1; then
  list() { git --git-dir="$src" ls-tree -d --name-only HEAD "$1/" 2>/dev/null; }
  copy() { git --git-dir="$src" archive HEAD "$1" | tar -x -C "$DEST/.tmp" && mv "$DEST/.tmp/$1" "$DEST/$2"; }
else
  list() { [ -d "$src/$1" ] && (cd "$src" && ls -d "$1"/*/ | sed 's:/$::'); }
  copy() { cp -r "$src/$1" "$DEST/$2"; }
fi
missing=()
while read -r id; do
  id=${id%%#*}; id=$(echo "$id" | tr -d '[:space:]')
  [ -n "$id" ] || continue
  [ -e "$DEST/$id" ] && continue
  mkdir -p "$DEST/.tmp"
  found=""
  for base in ${TB1_BASES:-original-tasks tasks}; do
    if list "$base" | grep -qx "$base/$id"; then copy "$base/$id" "$id"; found=1; break; fi
  done
  rm -rf "$DEST/.tmp"
  [ -n "$found" ] || missing+=("$id")
done < "$IDS"
echo "fetched $(find "$DEST" -mindepth 1 -maxdepth 1 -type d | wc -l) task(s) into $DEST"
[ ${#missing[@]} -eq 0 ] || echo "not in the source: ${missing[*]}" >&2
