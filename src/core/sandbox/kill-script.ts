/**
 * Bash run through a second `docker exec` to kill a timed-out command. Task images may lack procps
 * (debootstrap minbase has no `ps`/`pkill`), so processes are found by reading /proc with builtins
 * only — no `$(...)`, no external commands — which also keeps it working when a fork bomb has used
 * up the pids limit and nothing can fork.
 *
 * Modes:
 *   children <shellPid> <minStartTicks> [<stateDir>]
 *                                         kill every child of the persistent shell that started at or
 *                                         after the given /proc starttime, with its process group and
 *                                         all descendants (older children are background jobs).
 *   tree <pid>                            kill a process, its group and all descendants (execArgv).
 *   allbut <shellPid> [<stateDir>]        kill every process but init, the container's entrypoint
 *                                         (with what it started: the image's own services),
 *                                         processes that entered the pid namespace from outside
 *                                         (the tracer helper's, the studio's other execs), the
 *                                         shell's tracer and the persistent shell: foreground, background and
 *                                         double-forked jobs (reparented to init) alike.
 *   uptime                                print /proc/uptime in clock ticks (for minStartTicks), then
 *                                         how many forks the container's pids cgroup (v1 or v2) has
 *                                         refused at its limit so far (0 without one).
 *
 * With a state directory, the victims are first stopped (SIGSTOP) and, while a command process is
 * saving the shell's state (shell.ts marks `<stateDir>/saving`), let run until the save is done:
 * killed mid-save, the truncated files would cost the next command its variables, functions and
 * options. Stopping first means no save can begin between the check and the kill. The wait is
 * bounded (1-2 s: the command can write the mark too), then they are killed regardless.
 */
export const KILL_SCRIPT = [
  'mode=$1',
  'if [ "$mode" = uptime ]; then',
  '  read -r up _ < /proc/uptime; up=${up/./}; refused=0',
  '  for f in /sys/fs/cgroup/pids /sys/fs/cgroup; do',
  '    [ -r "$f/pids.events" ] || continue',
  '    while read -r k v; do [ "$k" = max ] && refused=$v; done < "$f/pids.events"',
  '    break',
  '  done',
  '  echo "$((10#$up)) $refused"; exit 0',
  'fi',
  'declare -A PPID_OF PGRP_OF START_OF',
  'scan() {',
  '  PPID_OF=(); PGRP_OF=(); START_OF=()',
  '  local d p s',
  '  for d in /proc/[0-9]*; do',
  '    p=${d#/proc/}',
  '    read -r s 2>/dev/null < "$d/stat" || continue',
  '    s=${s##*) }',
  '    set -- $s',
  '    # A zombie is dead already (its parent reaps it); counting it would keep the rounds going.',
  '    [ "$1" = Z ] && continue',
  '    PPID_OF[$p]=$2; PGRP_OF[$p]=$3; START_OF[$p]=${20}',
  '  done',
  '}',
  '# Breadth-first over the ppid relation from $2...; result in VICTIMS (a global: no subshell, no fork).',
  '# $1: a pid whose descendants are left out (it itself is in), or empty.',
  'collect() {',
  '  VICTIMS=(); local prune=$1; shift; local queue=("$@") p c',
  '  while [ ${#queue[@]} -gt 0 ]; do',
  '    p=${queue[0]}; queue=("${queue[@]:1}"); VICTIMS+=("$p")',
  '    [ "$p" = "$prune" ] || for c in "${!PPID_OF[@]}"; do [ "${PPID_OF[$c]}" = "$p" ] && queue+=("$c"); done',
  '  done',
  '}',
  '# Every victim but init, the entrypoint and this script stopped: a stopped process cannot fork.',
  'stop_victims() {',
  '  local p',
  '  for p in "${VICTIMS[@]}"; do [ "$p" != "$self" ] && [ "$p" != 1 ] && [ "$p" != "${entry:-1}" ] && kill -STOP "$p" 2>/dev/null; done',
  '}',
  'case $mode in children) sd=${4-};; allbut) sd=${3-};; *) sd=;; esac',
  'settle() {',
  '  local end=$((SECONDS + 2)) i p',
  '  while :; do',
  '    stop_victims',
  '    [ -s "$sd/saving" ] && [ "$SECONDS" -lt "$end" ] || return 0',
  '    for p in "${VICTIMS[@]}"; do kill -CONT "$p" 2>/dev/null; done',
  '    for ((i = 0; i < 2000; i++)); do [ -s "$sd/saving" ] || break; done',
  '  done',
  '}',
  'self=$$',
  '# The entrypoint is init\'s first child when an init runs as pid 1 (without one, pid 1 is the entrypoint).',
  'read -r s < /proc/1/stat; s=${s#*(}; init_comm=${s%%)*}',
  '# Until a scan finds no victim: a fork bomb refills every pid a kill frees. Stopping all victims',
  '# before killing any means a stopped one cannot fork into the slots the kills free.',
  'for ((round = 1; round <= 40; round++)); do',
  '  scan',
  '  roots=(); keep_pg=""',
  '  if [ "$mode" = children ]; then',
  '    keep_pg=${PGRP_OF[$2]}',
  '    for p in "${!PPID_OF[@]}"; do',
  '      [ "${PPID_OF[$p]}" = "$2" ] && [ "${START_OF[$p]}" -ge "$3" ] && [ "$p" != "$self" ] && roots+=("$p")',
  '    done',
  '  elif [ "$mode" = allbut ]; then',
  '    keep_pg=${PGRP_OF[$2]}; entry=1',
  '    if [ "$init_comm" != sleep ]; then',
  '      entry=""',
  '      for p in "${!PPID_OF[@]}"; do [ "${PPID_OF[$p]}" = 1 ] && { [ -z "$entry" ] || [ "${START_OF[$p]}" -lt "${START_OF[$entry]}" ]; } && entry=$p; done',
  '      entry=${entry:-1}',
  '    fi',
  '    # What the image entrypoint started (a service the tests check) lives on with it.',
  '    # So do processes put into this pid namespace from outside (parent 0 here: the studio\'s other',
  '    # execs, a tracer helper container sharing the namespace) with theirs; agent code cannot make one.',
  '    kroots=(); [ "$entry" != 1 ] && kroots+=("$entry")',
  '    for p in "${!PPID_OF[@]}"; do [ "${PPID_OF[$p]}" = 0 ] && [ "$p" != 1 ] && [ "$p" != "$2" ] && [ "$p" != "$self" ] && kroots+=("$p"); done',
  '    # And the shell\'s tracer (a traced shell\'s strace, detached to init): only it can be TracerPid.',
  '    while read -r k v; do [ "$k" = TracerPid: ] && [ "$v" != 0 ] && [ -n "${PPID_OF[$v]}" ] && kroots+=("$v"); done 2>/dev/null < "/proc/$2/status"',
  '    # Their trees are kept down to the shell, not below it (the shell may be one\'s child).',
  '    keep=" "; if [ ${#kroots[@]} -gt 0 ]; then collect "$2" "${kroots[@]}"; keep=" ${VICTIMS[*]} "; fi',
  '    for p in "${!PPID_OF[@]}"; do',
  '      [ "$p" != 1 ] && [ "$p" != "$2" ] && [ "$p" != "$self" ] && [ "$p" != "$entry" ] && [[ "$keep" != *" $p "* ]] && roots+=("$p")',
  '    done',
  '  elif [ -n "${PPID_OF[$2]}" ]; then roots=("$2"); fi',
  '  [ ${#roots[@]} -eq 0 ] && break',
  '  collect "" "${roots[@]}"',
  '  [ "$round" = 1 ] && [ -n "$sd" ] && settle',
  '  stop_victims',
  '  for p in "${VICTIMS[@]}"; do',
  '    g=${PGRP_OF[$p]}',
  '    # Never signal group 0 (outside our pid namespace), init\'s, the shell\'s or our own group.',
  '    if [ -n "$g" ] && [ "$g" != 0 ] && [ "$g" != "$keep_pg" ] && [ "$g" != "${PGRP_OF[1]}" ] && [ "$g" != "${PGRP_OF[${entry:-1}]}" ] && [ "$g" != "${PGRP_OF[$self]}" ]; then kill -KILL -- "-$g" 2>/dev/null; fi',
  '    [ "$p" != "$self" ] && [ "$p" != "${entry:-1}" ] && [ "$p" != 1 ] && kill -KILL "$p" 2>/dev/null',
  '  done',
  'done',
  'exit 0',
].join('\n');
