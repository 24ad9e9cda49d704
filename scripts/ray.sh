#!/usr/bin/env bash
# Local Ray head for the trainer-bridge tests: scripts/ray.sh start|stop|status|python
# Uses the venv made by scripts/setup.sh (.venv/ray, Ray pinned there). Listens on loopback only,
# dashboard (Jobs API) on TBRL_RAY_DASHBOARD_PORT (default 8365, not Ray's 8265, so a user's own
# local cluster is left alone); GCS on TBRL_RAY_PORT (default 6479).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${TBRL_RAY_VENV:-$PWD/.venv/ray}"
DASH_PORT="${TBRL_RAY_DASHBOARD_PORT:-8365}"
GCS_PORT="${TBRL_RAY_PORT:-6479}"
TMP_DIR="${TBRL_RAY_TMP:-/tmp/tbrl-ray}"
RAY="$VENV/bin/ray"

die() { printf '[ray.sh] %s\n' "$*" >&2; exit 1; }
[ -x "$RAY" ] || die "no Ray at $RAY: run scripts/setup.sh (it creates .venv/ray with ray[default])"
# Jobs run `python -m tbrl_bridge...`: the venv's python must come first on the raylet's PATH.
export PATH="$VENV/bin:$PATH"
export RAY_USAGE_STATS_ENABLED=0

up() { curl -fsS "http://127.0.0.1:$DASH_PORT/api/version" >/dev/null 2>&1; }

case "${1:-}" in
  start)
    if up; then echo "[ray.sh] head already up on 127.0.0.1:$DASH_PORT"; exit 0; fi
    mkdir -p "$TMP_DIR"
    "$RAY" start --head --node-ip-address 127.0.0.1 --port "$GCS_PORT" \
      --dashboard-host 127.0.0.1 --dashboard-port "$DASH_PORT" \
      --num-cpus 1 --num-gpus 0 --object-store-memory 200000000 \
      --temp-dir "$TMP_DIR" --include-dashboard true --disable-usage-stats >"$TMP_DIR/start.log" 2>&1 \
      || { tail -30 "$TMP_DIR/start.log" >&2; die "ray start failed (log above)"; }
    for _ in $(seq 1 60); do up && break; sleep 1; done
    up || { tail -30 "$TMP_DIR/start.log" >&2; die "dashboard did not answer on 127.0.0.1:$DASH_PORT within 60 s"; }
    echo "[ray.sh] head up: http://127.0.0.1:$DASH_PORT"
    ;;
  stop)
    "$RAY" stop --force >/dev/null 2>&1 || true
    echo "[ray.sh] head stopped"
    ;;
  status)
    up && echo "up http://127.0.0.1:$DASH_PORT" || { echo "down"; exit 1; }
    ;;
  python)
    echo "$VENV/bin/python"
    ;;
  *)
    die "usage: scripts/ray.sh start|stop|status|python"
    ;;
esac
