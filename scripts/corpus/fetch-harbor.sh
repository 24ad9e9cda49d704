#!/usr/bin/env bash
# Fetches the public Harbor tasks listed in scripts/corpus/harbor.txt into a corpus directory
# (default .corpus/harbor, ignored by git), one folder per task: <owner>__<repo>__<task name>.
# Each repository is cloned once at the pinned commit. Where GitHub cannot be reached, point
# HARBOR_CORPUS_MIRROR at a folder holding bare or working clones named <owner>+<repo> (with a
# repo/ inside, as the search tool's mirrors have it) or <owner>/<repo>.
#
#   bash scripts/corpus/fetch-harbor.sh [OUT] [LIST]   then: tbrl validate OUT/*
# LIST defaults to scripts/corpus/harbor.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../../.corpus/harbor"}
list=${2:-"$here/harbor.txt"}
mkdir -p "$out"
cache="$out/.repos"
mkdir -p "$cache"

clone() { # owner/repo commit -> path of a git dir that has the commit
  local repo=$1 commit=$2 dest="$cache/${1//\//+}"
  if [ ! -d "$dest" ]; then
    local mirror=""
    for m in "${HARBOR_CORPUS_MIRROR:-}/${repo//\//+}/repo" "${HARBOR_CORPUS_MIRROR:-}/${repo//\//+}" "${HARBOR_CORPUS_MIRROR:-}/$repo"; do
      if [ -n "${HARBOR_CORPUS_MIRROR:-}" ] && git -C "$m" rev-parse --git-dir >/dev/null 2>&1; then mirror=$m; break; fi
    done
    if [ -n "$mirror" ]; then git clone -q --bare "$mirror" "$dest"
    else git clone -q --bare --filter=blob:none "https://github.com/$repo.git" "$dest"; fi
  fi
  git -C "$dest" cat-file -e "$commit^{commit}" 2>/dev/null || git -C "$dest" fetch -q origin "$commit"
  echo "$dest"
}

n=0
while read -r repo commit path; do
  case "$repo" in ''|'#'*) continue ;; esac
  git_dir=$(clone "$repo" "$commit")
  name="${repo//\//__}__$(basename "$path")"
  rm -rf "${out:?}/$name"
  mkdir -p "$out/$name"
  git -C "$git_dir" archive "$commit" "$path" | tar -x -C "$out/$name" --strip-components="$(tr -cd / <<<"$path" | wc -c | awk '{print $1 + 1}')"
  n=$((n + 1))
done <"$list"
echo "fetched $n task(s) into $out"
