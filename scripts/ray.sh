#!/usr/bin/env bash
# The studio's local Ray head (trainer-bridge tests, local training): scripts/ray.sh start|stop|status|url|pids|python|env
# Uses the venv made by scripts/setup.sh (.venv/ray, Ray pinned there) and listens on loopback only.
# Every Ray component gets its own port, counted from TBRL_RAY_PORT_BASE (default 48000), so another
# Ray on this machine (a user's on Ray's defaults: GCS 6379, dashboard 8265, agent 52365, client
# 10001, or a second studio on another base) is left alone:
#   base+0 GCS   +1 dashboard (Jobs API)   +2 client server   +3 dashboard agent (HTTP)   +4 agent gRPC
#   +5 metrics   +6 node manager   +7 object manager   +8 runtime-env agent   +10..+39 workers
# TBRL_RAY_PORT / TBRL_RAY_DASHBOARD_PORT still set the GCS / dashboard port alone. `start` checks that
# every port is free first and names the one that is not; `stop` ends only this head's processes
# (found by its own temp dir, TBRL_RAY_TMP), never `ray stop`, which would stop every Ray on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${TBRL_RAY_VENV:-$PWD/.venv/ray}"
BASE="${TBRL_RAY_PORT_BASE:-48000}"
GCS_PORT="${TBRL_RAY_PORT:-$BASE}"
DASH_PORT="${TBRL_RAY_DASHBOARD_PORT:-$((BASE + 1))}"
CLIENT_PORT=$((BASE + 2))
AGENT_PORT=$((BASE + 3))
AGENT_GRPC_PORT=$((BASE + 4))
METRICS_PORT=$((BASE + 5))
NODE_MANAGER_PORT=$((BASE + 6))
OBJECT_MANAGER_PORT=$((BASE + 7))
RUNTIME_ENV_PORT=$((BASE + 8))
MIN_WORKER_PORT=$((BASE + 10))
MAX_WORKER_PORT=$((BASE + 39))
# One temp dir per head: it is how `stop` tells this head's processes from any other Ray's.
TMP_DIR="${TBRL_RAY_TMP:-/tmp/tbrl-ray-$GCS_PORT}"
TMP_DIR="${TMP_DIR%/}"
RAY="$VENV/bin/ray"
PY="$VENV/bin/python"

die() { printf '[ray.sh] %s\n' "$*" >&2; exit 1; }
# Jobs run `python -m tbrl_bridge...`: the venv's python must come first on the raylet's PATH.
export PATH="$VENV/bin:$PATH"
# What the studio's local dev clusters run with (the eval tests' and bench's cluster read the same
# file): each KEY=VALUE of scripts/ray-local.env unless already set; TBRL_RAY_QUIET=0 keeps Ray's
# defaults but for the usage stats.
LOCAL_KEYS=()
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in ''|'#'*) continue ;; esac
  key="${line%%=*}"
  [[ "$key" =~ ^[A-Za-z_][A-Za-z0-9_]*$ && "$line" == *=* ]] || die "scripts/ray-local.env: \"$line\" is not KEY=VALUE (no quotes, no spaces around =): fix that line"
  [ "${TBRL_RAY_QUIET:-1}" = 0 ] && [ "$key" != RAY_USAGE_STATS_ENABLED ] && continue
  [ -n "${!key+set}" ] || export "$key=${line#*=}"
  LOCAL_KEYS+=("$key")
done < scripts/ray-local.env
# Ray turns token auth on by itself once ~/.ray/auth_token exists (any ray.init() on the machine can
# create it): the Jobs API would then answer 401 to the tests and to `tbrl train` without a token.
# The head's dashboard listens on loopback only; set RAY_AUTH_MODE=token to use a token anyway.
export RAY_AUTH_MODE="${RAY_AUTH_MODE:-disabled}"

up() { curl -fsS "http://127.0.0.1:$DASH_PORT/api/version" >/dev/null 2>&1; }

# PIDs of this head: the processes that inherited its marker variable from `ray start` (every Ray
# process it spawns, the client server included), or whose command line names its temp dir, and all
# their descendants (agents and workers retitle themselves "ray::...").
own_pids() {
  "$PY" - "$TMP_DIR" <<'PYEOF'
import os, re, sys
pattern = re.compile(re.escape(sys.argv[1]) + r"(?=/|$|[\s,;:'\"])")
marker = f"TBRL_RAY_HEAD={sys.argv[1]}".encode()
me = {os.getpid(), os.getppid()}
parent, seeds = {}, set()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    parent[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
    try:
        marked = marker in open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        marked = False
    if int(pid) not in me and (marked or any(pattern.search(a.decode("utf-8", "replace")) for a in args)):
        seeds.add(int(pid))
own, grew = set(seeds), True
while grew:
    grew = False
    for pid, ppid in parent.items():
        if ppid in own and pid not in own and pid not in me:
            own.add(pid)
            grew = True
print("\n".join(map(str, sorted(own))))
PYEOF
}

# Every port this head will listen on must be free, checked before `ray start` (which would report
# success while a component such as the dashboard agent fails to bind behind it).
check_ports() {
  "$PY" - "$MIN_WORKER_PORT" "$MAX_WORKER_PORT" \
    "GCS (TBRL_RAY_PORT)=$GCS_PORT" "dashboard (TBRL_RAY_DASHBOARD_PORT)=$DASH_PORT" "client server=$CLIENT_PORT" \
    "dashboard agent=$AGENT_PORT" "dashboard agent gRPC=$AGENT_GRPC_PORT" "metrics=$METRICS_PORT" \
    "node manager=$NODE_MANAGER_PORT" "object manager=$OBJECT_MANAGER_PORT" "runtime-env agent=$RUNTIME_ENV_PORT" <<'PYEOF'
import sys
low, high = int(sys.argv[1]), int(sys.argv[2])
ports = [tuple(a.rsplit("=", 1)) for a in sys.argv[3:]] + [(f"worker ({low}-{high})", str(p)) for p in range(low, high + 1)]
# Listening sockets on any address. Not a test bind: these ports lie in the kernel's ephemeral range,
# so short-lived client connections (TIME_WAIT) hold them now and then without being in the way.
listening = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        fields = row.split()
        if len(fields) > 3 and fields[3] == "0A":
            listening.add(int(fields[1].rsplit(":", 1)[1], 16))
busy = [f"{port} ({name})" for name, port in ports if int(port) in listening]
if busy:
    print("port " + ", ".join(busy[:5]) + (f" and {len(busy) - 5} more" if len(busy) > 5 else "") + (" is" if len(busy) == 1 else " are") + " already in use")
    sys.exit(1)
PYEOF
}

case "${1:-}" in
  start)
    [ -x "$RAY" ] || die "no Ray at $RAY: run scripts/setup.sh (it creates .venv/ray with ray[default])"
    if [ -n "$(own_pids)" ]; then
      up && { echo "[ray.sh] head already up on 127.0.0.1:$DASH_PORT"; exit 0; }
      die "a head with temp dir $TMP_DIR is running but its dashboard does not answer on 127.0.0.1:$DASH_PORT: run scripts/ray.sh stop, then start"
    fi
    problem="$(check_ports)" || die "$problem: another Ray or program holds it. Stop that program, or give this head other ports: TBRL_RAY_PORT_BASE=<port> scripts/ray.sh start (it uses that port and the 39 above it)."
    mkdir -p "$TMP_DIR"
    # `ray start` through the local clusters' launcher (the test helper's cluster uses it too): it gives the
    # dashboard the modules of scripts/ray-local.env (TBRL_RAY_DASHBOARD_MODULES), which `ray start` cannot.
    TBRL_RAY_HEAD="$TMP_DIR" "$PY" scripts/ray-start.py start --head --node-ip-address 127.0.0.1 --port "$GCS_PORT" \
      --dashboard-host 127.0.0.1 --dashboard-port "$DASH_PORT" \
      --ray-client-server-port "$CLIENT_PORT" \
      --dashboard-agent-listen-port "$AGENT_PORT" --dashboard-agent-grpc-port "$AGENT_GRPC_PORT" \
      --metrics-export-port "$METRICS_PORT" --node-manager-port "$NODE_MANAGER_PORT" \
      --object-manager-port "$OBJECT_MANAGER_PORT" --runtime-env-agent-port "$RUNTIME_ENV_PORT" \
      --min-worker-port "$MIN_WORKER_PORT" --max-worker-port "$MAX_WORKER_PORT" \
      --num-cpus 1 --num-gpus 0 --object-store-memory 200000000 \
      --temp-dir "$TMP_DIR" --include-dashboard true --disable-usage-stats >"$TMP_DIR/start.log" 2>&1 \
      || { tail -30 "$TMP_DIR/start.log" >&2; die "ray start failed (log above)"; }
    # The Jobs API needs the dashboard and its agent: a submit before the agent registers gets "No available agent".
    for _ in $(seq 1 60); do
      up && curl -fsS "http://127.0.0.1:$AGENT_PORT/api/local_raylet_healthz" >/dev/null 2>&1 && break
      sleep 1
    done
    up || { tail -30 "$TMP_DIR/start.log" >&2; die "dashboard did not answer on 127.0.0.1:$DASH_PORT within 60 s"; }
    own_pids >"$TMP_DIR/head.pids"
    echo "[ray.sh] head up: http://127.0.0.1:$DASH_PORT (ports $GCS_PORT-$MAX_WORKER_PORT, temp dir $TMP_DIR)"
    ;;
  stop)
    pids="$(own_pids | tr '\n' ' ')"
    if [ -z "${pids// /}" ]; then echo "[ray.sh] no head with temp dir $TMP_DIR is running"; exit 0; fi
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 1 20); do
      left="$(own_pids | tr '\n' ' ')"
      [ -z "${left// /}" ] && break
      sleep 0.5
    done
    left="$(own_pids | tr '\n' ' ')"
    # shellcheck disable=SC2086
    [ -z "${left// /}" ] || kill -KILL $left 2>/dev/null || true
    rm -f "$TMP_DIR/head.pids"
    echo "[ray.sh] head stopped (its processes only; other Rays on this machine were left alone)"
    ;;
  status)
    if [ -n "$(own_pids)" ] && up; then echo "up http://127.0.0.1:$DASH_PORT"; else echo "down"; exit 1; fi
    ;;
  url)
    echo "http://127.0.0.1:$DASH_PORT"
    ;;
  pids)
    own_pids
    ;;
  python)
    echo "$PY"
    ;;
  env)
    # What this head runs with from scripts/ray-local.env (after the environment's own values).
    for key in "${LOCAL_KEYS[@]}"; do echo "$key=${!key}"; done
    ;;
  *)
    die "usage: scripts/ray.sh start|stop|status|url|pids|python|env"
    ;;
esac
