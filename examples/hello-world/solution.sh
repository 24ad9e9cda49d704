#!/bin/bash
set -euo pipefail
# Look around first (these reads change nothing the tests check).
ls -la /app/data
head -n 3 /app/data/input.txt
mkdir -p /app/out
cat > /app/wordfreq.py <<'PY'
import json
import re
from collections import Counter

with open("/app/data/input.txt", encoding="utf-8") as f:
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", f.read())]
counts = sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))
with open("/app/out/counts.json", "w", encoding="utf-8") as f:
    json.dump([[w, c] for w, c in counts], f)
with open("/app/out/summary.txt", "w", encoding="utf-8") as f:
    f.write(f"{len(counts)} distinct words, {len(words)} total, top: {counts[0][0]}\n")
PY
python3 /app/wordfreq.py
# Check the result by eye.
cat /app/out/summary.txt
