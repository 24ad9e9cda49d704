import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { ExecResult } from './types';
import { CappedOutput } from './output-cap';
import { DockerDemuxer } from './demux';
import { ansiCQuote } from './bash-quote';
import { KILL_SCRIPT } from './kill-script';
import { SHELL_STATE_PREFIX, TRACE_MARK_PREFIX } from './shell-paths';
import { CAGE_DIR } from './cage';

/** Starts `bash` in the container with stdin attached: the raw multiplexed stream and a way to read its exit code. */
export type ShellSpawner = (workdir: string | undefined) => Promise<{ stream: Duplex; exitCode: () => Promise<number | null> }>;
/** Runs a helper program by a separate `docker exec` (used to kill timed-out commands). */
export type AuxRunner = (argv: string[]) => Promise<{ exitCode: number | null; stdout: Buffer }>;

/**
 * The AuxRunner for a container: a separate `docker exec` of argv (never through the persistent
 * shell, which may be the thing that is stuck), stdout collected, stderr dropped.
 */
export function containerAuxRunner(container: Docker.Container): AuxRunner {
  return async (argv) => {
    const exec = await container.exec({ Cmd: argv, AttachStdout: true, AttachStderr: true, Tty: false });
    const stream = (await exec.start({ hijack: true, stdin: false })) as unknown as Duplex;
    const out: Buffer[] = [];
    const demux = new DockerDemuxer((kind, payload) => { if (kind === 'stdout') out.push(Buffer.from(payload)); });
    stream.on('data', (c: Buffer) => demux.push(c));
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    const inspected = await exec.inspect().catch(() => undefined);
    return { exitCode: inspected?.ExitCode ?? null, stdout: Buffer.concat(out) };
  };
}

export interface ShellRunOptions {
  timeoutMs?: number;
  maxOutputBytes: number;
  background?: boolean;
  /**
   * Traced commands: the frame shell itself opens `/.tbrl-mark-<n>-begin` before it starts the
   * command's process and `/.tbrl-mark-<n>-end` after `wait` (after the fork, for a background
   * command), so the tracer's windows are cut by a pid no agent code runs as.
   */
  traceMark?: number;
}

/** The shell did not answer its own start-up/state command (a container too starved to run bash). */
export class ShellUnresponsiveError extends Error {
  constructor(readonly partialOutput: string) {
    super('persistent shell did not answer');
  }
}

/** Raised to the caller when the shell's stream ends while a command runs; the sandbox explains why. */
export class ShellEndedError extends Error {
  constructor(
    readonly partialOutput: string,
    readonly exitCode: () => Promise<number | null>,
  ) {
    super('persistent shell ended');
  }
}


/**
 * Capabilities the agent's processes may lose so that the frame shell holds one they lack: the
 * kernel then refuses them /proc/<frame shell>/{mem,environ,fd/*} (ptrace access needs the
 * caller's capabilities to cover the target's). The first one the frame shell has is dropped;
 * AUDIT_WRITE (used only for audit logging) comes first. [name, capability bit].
 */
const CAGE_CAPS: [string, number][] = [['audit_write', 29], ['mknod', 27], ['setfcap', 31], ['sys_chroot', 18], ['net_raw', 13]];

/**
 * Variables bash sets itself (or that describe one process): never carried to the next command.
 * The readonly ones (EUID, PPID, UID, BASHOPTS, SHELLOPTS, BASH_VERSINFO) cannot be unset; the
 * next process refuses their assignment quietly.
 */
const NOT_CARRIED = 'BASH BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_CMDS BASH_COMMAND BASH_EXECUTION_STRING BASH_LINENO BASH_MONOSECONDS BASH_REMATCH BASH_SOURCE BASH_SUBSHELL BASH_TRAPSIG BASH_VERSION COLUMNS COMP_WORDBREAKS DIRSTACK EPOCHREALTIME EPOCHSECONDS FUNCNAME GROUPS HISTCMD HOSTNAME HOSTTYPE LINENO LINES MACHTYPE OSTYPE PIPESTATUS PWD RANDOM SECONDS SHLVL SRANDOM _';

/**
 * Saves the shell state of a command process for the next one, as files of shell code in the
 * state directory: `opts` (shopt, set -o), `trace` (xtrace/verbose, applied with the command so
 * our own lines are never traced), `vars` (every variable but bash's own), `funcs` (functions,
 * then aliases), and `cwd` last (its presence says the save completed). Runs from the command
 * process's EXIT trap (SAVE_TRAP) with stderr closed, so an agent's `set -x` does not show it.
 * errexit (a failing command would end every later one) and noexec are never carried.
 * `__tbrl_f`, `__tbrl_so` and `__tbrl_bo` hold `$-`, SHELLOPTS and BASHOPTS from before the trap.
 */
const SAVE_FN = [
  '__tbrl_save() {',
  '  builtin set +euxvC',
  '  builtin test "${__tbrl_k-}" = save || builtin return 0',
  '  __tbrl_k=saved',
  // While this mark is set a stop waits before it kills (kill-script.ts): killed mid-save, the
  // truncated files would leave the next command without its state.
  '  builtin echo 1 >|"$__tbrl_d/saving"',
  "  builtin local IFS=$' \\t\\n' __tbrl_n",
  '  { builtin shopt -p; builtin set +o',
  // Leaving posix mode (the trap's) resets some shopts: say again what they were before the trap.
  "    for __tbrl_n in ${BASHOPTS//:/ }; do case :$__tbrl_bo: in *:$__tbrl_n:*) ;; *) builtin echo \"builtin shopt -u $__tbrl_n\";; esac; done",
  "    builtin test -z \"$__tbrl_bo\" || builtin echo \"builtin shopt -s ${__tbrl_bo//:/ }\"",
  "    case $__tbrl_f in *u*) builtin echo 'builtin set -u';; esac",
  "    case $__tbrl_f in *C*) builtin echo 'builtin set -C';; esac",
  "    case :$__tbrl_so: in *:posix:*) builtin echo 'builtin set -o posix';; esac",
  '  } >|"$__tbrl_d/opts" || builtin return 0',
  "  case $__tbrl_f in *x*v*|*v*x*) builtin echo 'builtin set -xv';; *x*) builtin echo 'builtin set -x';; *v*) builtin echo 'builtin set -v';; *) builtin echo ':';; esac >|\"$__tbrl_d/trace\"",
  '  { builtin declare -f; builtin alias -p; } >|"$__tbrl_d/funcs" || builtin return 0',
  // One `declare -p` of everything left once bash's own variables are gone (the process is exiting).
  // Every __tbrl_ variable goes too (the frame shell's own, the nonce among them, when it saves
  // the first state); the paths stay in the function's positional parameters.
  '  builtin set -- "$__tbrl_d" "$PWD"',
  `  builtin unset -v \${!__tbrl_@} ${NOT_CARRIED}`,
  '  builtin declare -p >|"$1/vars" || builtin return 0',
  "  builtin printf '%s\\0' \"$2\" >|\"$1/cwd\"",
  // `builtin :`: the agent's functions are defined here, and one may be named `:` (a fork bomb's is).
  '  builtin : >|"$1/saving"',
  '}',
].join('\n');

/**
 * The command process's EXIT trap. Agent functions may shadow any regular builtin, `builtin` and
 * `command` included; POSIXLY_CORRECT (an assignment: no lookup) makes `unset` and `eval` special
 * builtins that no function can shadow, so the trap drops the agent's `builtin`/`command`/
 * `__tbrl_save` functions (they are not carried over) and defines the save afresh.
 */
const SAVE_TRAP = '{ __tbrl_f=$- __tbrl_so=$SHELLOPTS __tbrl_bo=$BASHOPTS POSIXLY_CORRECT=1; unset -f builtin command __tbrl_save; eval "$__tbrl_savefn"; unset POSIXLY_CORRECT; __tbrl_save; } 2>/dev/null';

/**
 * The program of one command process: `bash -c CHILD bash <state dir> <save|nosave> <command> '' [<trace mark>]`
 * (or `... '' file [<trace mark>]` with the command in `<state dir>/cmd` when it is too long for an argument).
 * It starts from an empty environment (`exec -c`), sources the options and variables (before its
 * own variables are set: the saved ones include a stale copy), then — in
 * the same `eval` as the command, so no agent function or alias exists while our own lines run —
 * the tracing flags, functions and aliases, and runs the command at top level: `cd`, `export`,
 * plain variables, functions, aliases and options carry over to the next command as in one
 * terminal. Traps, jobs and `enable` settings belong to one command. State files are sourced
 * (read whole), never read with `read -d` (one syscall per byte).
 */
const CHILD = [
  // A traced command (`$5`: its marker number) says where its own start-up ends, before anything of
  // the saved state (which a command can rewrite) runs: the tracer keeps this process's events from here.
  `builtin test -z "\${5-}" || : 2>/dev/null <"${TRACE_MARK_PREFIX}\${5-}-go"`,
  'builtin set -m',
  '{ builtin . "$1/opts"; builtin . "$1/vars"; } 2>/dev/null',
  '__tbrl_d=$1 __tbrl_k=$2 __tbrl_c=$3',
  'builtin test "${4-}" != file || __tbrl_c=$(<"$__tbrl_d/cmd")',
  'builtin shift $#',
  `__tbrl_savefn=${ansiCQuote(SAVE_FN)}`,
  `builtin trap ${ansiCQuote(SAVE_TRAP)} EXIT`,
  `builtin eval "builtin . \\"\\$__tbrl_d/trace\\" 2>/dev/null"$'\\n''{ builtin . "$__tbrl_d/funcs"; } 2>/dev/null'$'\\n'"$__tbrl_c"`,
].join('\n');

/** Commands longer than this go to the child through a file (one argument may hold 128 KiB). */
const ARG_LIMIT = 100_000;

/**
 * The frame shell: a bash that never runs agent code. It reads its own program and the commands
 * from the studio on stdin; each command runs in a fresh child bash (`__tbrl_run`), and the frame
 * shell itself prints the frame — the child's exit status as `wait` saw it, and the cwd the child
 * left (which the frame shell moves to). The nonce lives only in this process's memory: it is in
 * no argument, environment or file, the children are exec'd (they get none of its variables), and
 * where `setpriv` and a capability allow it the children lose one capability the frame shell
 * keeps, so the kernel refuses them this process's /proc memory, environment and descriptors.
 * Agent functions, traps (DEBUG/RETURN/EXIT), extdebug, PROMPT_COMMAND or `enable -n` live and
 * die in a child and never run here.
 *
 * Before each command: a working directory deleted since the last command is replaced by `home`
 * (the task's workdir), and a removed state directory by the container's environment, each with a
 * note.
 */
export function frameShellPrelude(nonce: string, home: string, stateDir: string): string {
  const pick = (probe: (name: string, bit: number) => string, use: (name: string, bit: number) => string) =>
    CAGE_CAPS.map(([name, bit]) => `(( 16#\${__tbrl_prm:-0} >> ${bit} & 1 )) && ${probe(name, bit)} && { ${use(name, bit)}; break; }`).join('\n  ');
  const helper = pick((_n, bit) => `"$__tbrl_helper" probe ${bit}`, (name, bit) => `__tbrl_cage=("$__tbrl_helper" run ${bit}) __tbrl_cagecap=${name} __tbrl_cagehow=helper`);
  const setpriv = pick((name) => `setpriv --bounding-set -${name} true 2>/dev/null`, (name) => `__tbrl_cage=(setpriv --bounding-set -${name}) __tbrl_cagecap=${name} __tbrl_cagehow=setpriv`);
  return [
    // A frame shell started with --posix has not sourced $BASH_ENV (a file a command may have
    // rewritten before this shell was restarted); leaving posix mode keeps inherit_errexit on.
    'case :$SHELLOPTS: in *:posix:*) set +o posix; shopt -u inherit_errexit;; esac',
    'set -m',
    `__tbrl_nonce=${nonce} __tbrl_home=${ansiCQuote(home)} __tbrl_d=${ansiCQuote(stateDir)} __tbrl_note=`,
    `__tbrl_child=${ansiCQuote(CHILD)}`,
    '__tbrl_bash=$(type -P bash || echo /bin/bash) __tbrl_cage=() __tbrl_prm= __tbrl_helper= __tbrl_cagecap=none __tbrl_cagehow=none',
    // The frame shell may be the studio's static bash, but the agent's commands run in the image's
    // own: without one the sandbox fails to start (SHELL_UNAVAILABLE), not every command with 127.
    `[ -x "$__tbrl_bash" ] || { echo "the image has no bash on PATH"; exit 127; }`,
    'while read -r __tbrl_k __tbrl_x; do [ "$__tbrl_k" = CapPrm: ] && __tbrl_prm=$__tbrl_x; done </proc/$$/status 2>/dev/null',
    // The studio's helper counts only on its read-only mount (fields 5 and 6 of mountinfo: mount
    // point and per-mount options); a file the agent put at that path without the mount is ignored.
    `while read -r _ _ _ _ __tbrl_k __tbrl_x _; do [ "$__tbrl_k" = ${CAGE_DIR} ] && case ,$__tbrl_x, in *,ro,*) [ -x ${CAGE_DIR}/cage ] && __tbrl_helper=${CAGE_DIR}/cage;; *) __tbrl_helper=;; esac; done </proc/self/mountinfo 2>/dev/null`,
    // With the helper this shell executes nothing of the image: the helper drops the capability,
    // then execs the image's bash, caged. Without it, the image's setpriv, which a command can
    // replace: that weaker mode is reported (cagedBy `setpriv`) in the run header.
    `if [ -n "$__tbrl_helper" ]; then for __tbrl_x in 1; do\n  ${helper}\ndone\nelif type -P setpriv >/dev/null 2>&1; then for __tbrl_x in 1; do\n  ${setpriv}\ndone; fi`,
    "__tbrl_frame() { printf '\\n__TBRL_%s__ %s %s %s\\n' \"$__tbrl_nonce\" \"$1\" \"$2\" \"$PWD\"; }",
    // The first state is this shell's own (the container's environment), saved by the same code;
    // its functions (these) are not the agent's, so the first command starts with none.
    SAVE_FN,
    '__tbrl_fresh() { if [ -n "$__tbrl_helper" ]; then "$__tbrl_helper" mkdir "$__tbrl_d"; else mkdir -p -m 700 "$__tbrl_d"; fi 2>/dev/null; __tbrl_k=save __tbrl_f=$- __tbrl_so=$SHELLOPTS __tbrl_bo=$BASHOPTS; ( __tbrl_save ) 2>/dev/null; : >|"$__tbrl_d/funcs"; }',
    `__tbrl_spawn() { if [ \${#1} -lt ${ARG_LIMIT} ]; then set -- "$1" "$2" '' "$3"; else printf %s "$1" >|"$__tbrl_d/cmd"; set -- '' "$2" file "$3"; fi`,
    // The redirections belong to the exec'd child: this shell's own stderr stays /dev/null, so its
  // job report of a killed command ("Killed ( exec -c ...)") never reaches the output.
  `  ( exec -c "\${__tbrl_cage[@]}" "$__tbrl_bash" --noprofile --norc -c "$__tbrl_child" bash "$__tbrl_d" "$2" "$1" "$3" "$4" </dev/null 2>&1 ); }`,
    // A trace marker (the tracer cuts its per-command windows at these opens; shell-paths.ts).
    `__tbrl_mark() { [ -z "$1" ] || : 2>/dev/null <"${TRACE_MARK_PREFIX}$1-$2"; }`,
    // $1 command, $2 background log ('' in the foreground), $3 trace marker number ('' untraced).
    '__tbrl_run() {',
    '  local rc c',
    '  [ "$PWD" -ef . ] 2>/dev/null || cd -- "$PWD" 2>/dev/null || {',
    '    c=$PWD; cd -- "$__tbrl_home" 2>/dev/null || cd /',
    "    __tbrl_note+=\"[note: the working directory $c no longer exists; the command runs in $PWD]\"$'\\n'; }",
    '  [ -s "$__tbrl_d/opts" ] || { __tbrl_fresh',
    "    __tbrl_note+=\"[note: the shell's saved state ($__tbrl_d) was removed; the command runs with the container's original environment]\"$'\\n'; }",
    "  printf %s \"$__tbrl_note\"; __tbrl_note=",
    '  if [ -n "$2" ]; then __tbrl_mark "$3" begin; __tbrl_spawn "$1" nosave >"$2" & __tbrl_mark "$3" end; __tbrl_frame 0 $!; return; fi',
    '  : 2>/dev/null >|"$__tbrl_d/cwd"',
    '  __tbrl_mark "$3" begin; __tbrl_spawn "$1" save "$3"; rc=$?; __tbrl_mark "$3" end',
    '  if [ -s "$__tbrl_d/cwd" ]; then',
    "    IFS= read -r -d '' c <\"$__tbrl_d/cwd\"",
    '    [ "$c" = "$PWD" ] || cd -- "$c" 2>/dev/null || {',
    '      cd -- "$__tbrl_home" 2>/dev/null || cd /',
    "      __tbrl_note+=\"[note: the working directory $c no longer exists; the command runs in $PWD]\"$'\\n'; }",
    '    __tbrl_frame "$rc" -',
    '  else __tbrl_frame "$rc" lost; fi',
    '}',
    '__tbrl_fresh',
    // From here on this shell's own stderr (job reports such as "Killed ( exec -c ...)" of a killed
    // command) is not the command's output; commands get their own 2>&1.
    'exec 2>/dev/null',
    '',
  ].join('\n');
}

/**
 * One agent command for the frame shell (`background`: started with output to a log, framed at
 * once; `traceMark`: the frame shell opens that command's trace markers around it).
 */
export function runLine(command: string, background?: { log: string }, traceMark?: number): string {
  const mark = traceMark === undefined ? '' : ` ${Math.floor(traceMark)}`;
  return `__tbrl_run ${ansiCQuote(command)}${background || mark ? ` ${ansiCQuote(background?.log ?? '')}` : ''}${mark}`;
}

/** One of the studio's own commands, run in the frame shell itself (start-up questions only). */
export function frameShellLine(command: string): string {
  return `{ ${command}\n} </dev/null 2>&1; __tbrl_frame $? -`;
}

const STRAY_LIMIT = 64 * 1024;

/** A reason from outside (e.g. the disk watchdog) to end the running command, and what its result says. */
export interface StopRequest {
  /** Appended to the command's output, e.g. `[stopped: ...]`. */
  note: string;
  /** Extra fields on the command's ExecResult (e.g. `diskLimitExceeded`). */
  fields: Partial<ExecResult>;
}

/** What the frame shell says when a command ends. */
interface FrameEnd {
  exitCode: number;
  /** A background command's pid. */
  pid?: number;
  cwd: string;
  /** The command's process ended without saving the shell state (exec, a signal). */
  stateLost: boolean;
}

/** cwd and exported environment, NUL-separated, for checkpoints (run as a command: that is where they live). */
const STATE_DUMP = 'builtin printf \'%s\\0\' "$PWD"; for __tbrl_e in $(builtin compgen -e); do builtin printf \'%s=%s\\0\' "$__tbrl_e" "${!__tbrl_e}"; done';

interface Pending {
  nonce: string;
  marker: Buffer;
  output: CappedOutput;
  carry: Buffer;
  resolve: (r: FrameEnd) => void;
  reject: (e: Error) => void;
}

/**
 * One long-lived frame shell per container (see frameShellPrelude). Commands run one at a time,
 * each in its own bash process that inherits the previous one's state, so `cd`, `export`,
 * variables, functions and aliases persist as in a terminal; each is framed by the frame shell,
 * with a nonce only it knows.
 */
export class PersistentShell {
  private stream?: Duplex;
  private pending?: Pending;
  private stray: Buffer[] = [];
  private strayBytes = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private shellPid = 0;
  private alive = false;
  private closed = false;
  /** Set while a command runs: ends its wait with a stop request. */
  private stopCurrent?: (request: StopRequest) => Promise<void>;
  /** The image user's ids (files written through the archive API get them). */
  uid = 0;
  gid = 0;
  /** Last cwd reported by the shell: a respawned shell starts there. */
  cwd: string | undefined;
  /** Set when the shell had to be restarted (the exported environment of the old one is gone). */
  restarts = 0;
  /** The container's count of forks refused at its pids limit, when a timeout last looked. */
  private forksRefusedSeen = 0;
  /** The directory a new shell starts in and a deleted cwd falls back to (the task's workdir). */
  readonly home: string;
  /**
   * The capability the agent's processes run without (so they cannot read the frame shell's
   * memory or descriptors), or undefined where the image has no `setpriv` or the shell has none.
   */
  cage: string | undefined;
  /**
   * What drops it: `helper`, the studio's static program on a read-only mount (nothing of the
   * image runs uncaged), or `setpriv`, the image's own, which a command can replace.
   */
  cagedBy: 'helper' | 'setpriv' | undefined;
  private nonce = '';
  /** This frame shell's state directory (where a stop looks for a save in progress). */
  private stateDir?: string;
  /** Said once, at the head of the next command's output (why the shell or its cwd changed). */
  private note = '';
  private everStarted = false;

  constructor(
    private readonly spawn: ShellSpawner,
    private readonly aux: AuxRunner,
    initialCwd?: string,
  ) {
    this.cwd = initialCwd;
    this.home = initialCwd ?? '/';
  }

  get pid(): number {
    return this.shellPid;
  }

  /** Starts the shell (idempotent); later calls respawn it if the previous one exited. */
  async ensureStarted(): Promise<void> {
    if (this.alive) return;
    // A respawn starts in the home directory (the last cwd may be deleted: Docker cannot start an
    // exec there) and then goes back to the last cwd when it still exists.
    const back = this.everStarted && this.cwd !== undefined && this.cwd !== this.home ? this.cwd : undefined;
    try {
      await this.startIn(this.everStarted ? this.home : this.cwd);
    } catch (err) {
      if (!(err instanceof ShellEndedError) || this.closed) throw err;
      // The start directory itself is gone (the agent removed the workdir): start at /.
      const missing = this.everStarted ? this.home : this.cwd;
      await this.startIn('/');
      this.note += `[note: ${missing ?? 'the working directory'} no longer exists; the shell started in /]\n`;
      this.cwd = '/';
      return;
    }
    this.everStarted = true;
    if (back) {
      const r = await this.frame({ command: `builtin cd -- ${ansiCQuote(back)}` }, 10_000);
      if (r.exitCode !== 0) this.note += `[note: the previous working directory ${back} no longer exists; the new shell is in ${this.home}]\n`;
      else this.cwd = back;
    }
  }

  private async startIn(dir: string | undefined): Promise<void> {
    const { stream, exitCode } = await this.spawn(dir);
    this.stream = stream;
    this.alive = true;
    // One nonce per frame shell: it reaches the shell here, before any agent code can run, and
    // never travels again (a later line on stdin could be read by a process that opened it).
    this.nonce = randomBytes(16).toString('hex');
    const demux = new DockerDemuxer((kind, payload) => this.onOutput(kind, payload));
    stream.on('data', (chunk: Buffer) => demux.push(chunk));
    const ended = () => {
      if (this.stream !== stream) return;
      this.alive = false;
      const p = this.pending;
      this.pending = undefined;
      p?.reject(new ShellEndedError(p.output.text(), exitCode));
    };
    stream.on('end', ended);
    stream.on('close', ended);
    stream.on('error', ended);
    this.stateDir = `${SHELL_STATE_PREFIX}${randomBytes(6).toString('hex')}`;
    stream.write(frameShellPrelude(this.nonce, this.home, this.stateDir));
    const r = await this.frame({ frameShell: 'builtin echo -n "$$ $EUID ${GROUPS[0]} $__tbrl_cagecap $__tbrl_cagehow"' }, 10_000);
    this.everStarted = true;
    const [pid, uid, gid, cage, how] = r.output.text().trim().split(' ');
    this.shellPid = Number(pid);
    this.uid = Number(uid) || 0;
    this.gid = Number(gid) || 0;
    this.cage = cage && cage !== 'none' ? cage : undefined;
    this.cagedBy = how === 'helper' || how === 'setpriv' ? how : undefined;
  }

  /** Serialises commands: the shell is one terminal. */
  run(command: string, options: ShellRunOptions): Promise<ExecResult> {
    const job = this.queue.then(() => this.runNow(command, options));
    this.queue = job.catch(() => undefined);
    return job;
  }

  /** cwd and exported environment, for checkpoints. */
  state(): Promise<{ cwd: string; env: Record<string, string> }> {
    const job = this.queue.then(async () => {
      await this.ensureStarted();
      const r = await this.frame({ command: STATE_DUMP }, 30_000, 64 * 1024 * 1024);
      const parts = r.raw.toString('utf8').split('\0');
      const cwd = parts[0];
      const env: Record<string, string> = {};
      for (const kv of parts.slice(1)) {
        const eq = kv.indexOf('=');
        if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
      }
      return { cwd, env };
    });
    this.queue = job.catch(() => undefined);
    return job;
  }

  /**
   * Stops the running command from outside: kills every process but the shell (the command's tree
   * and background jobs alike) and ends the command with `request` in its result. Returns false when
   * no command is running; the caller then kills with `killAllButShell` and reports it itself.
   * Resolves after the kill.
   */
  async requestStop(request: StopRequest): Promise<boolean> {
    if (!this.stopCurrent) return false;
    // Resolves once the kill is done, so the caller measures what the dead writers left.
    await this.stopCurrent(request);
    return true;
  }

  /** Kills every process in the container except init, its entrypoint and this shell. */
  async killAllButShell(): Promise<void> {
    try {
      await this.aux(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'allbut', String(this.shellPid), this.stateDir ?? '']);
    } catch {
      // Best effort, as for timeouts: a stuck command is handled by the shell restart in frame().
    }
  }

  close(): void {
    this.closed = true;
    this.alive = false;
    this.stream?.destroy();
  }

  private async runNow(command: string, options: ShellRunOptions): Promise<ExecResult> {
    if (this.closed) throw new Error('sandbox is closed');
    await this.ensureStarted();
    const started = Date.now();
    if (options.background) {
      const log = `/tmp/tbrl-bg-${randomBytes(4).toString('hex')}.log`;
      const r = await this.frame({ command, background: { log }, traceMark: options.traceMark }, 10_000, options.maxOutputBytes, true);
      const out = `${this.takeNote()}${r.output.text()}[started in background: pid ${r.pid}, output in ${log}]\n`;
      return { exitCode: 0, output: out, droppedBytes: 0, timedOut: false, durationMs: Date.now() - started };
    }
    const note = this.takeNote();
    const r = await this.frame({ command, traceMark: options.traceMark }, options.timeoutMs, options.maxOutputBytes, true);
    const pidsNote = r.backgroundKilledBecause ? `; ${r.backgroundKilledBecause}, so every background process was killed too` : '';
    const killNotes = `${pidsNote}${r.restarted ? '; the shell was restarted, exported variables were reset' : ''}`;
    let output = note + r.output.text();
    if (r.timedOut) output += `\n[killed after ${options.timeoutMs} ms timeout${killNotes}]\n`;
    else if (r.stopped) output += `\n${r.stopped.note.replace(/\]$/, `${killNotes}]`)}\n`;
    else if (r.stateLost) output += `\n[note: the command's shell process ended without saving its state (it ran \`exec\`, got a signal, or its own traps stopped the save; exit status ${r.exitCode}); the next command runs with the working directory and variables from before this command]\n`;
    return {
      exitCode: r.timedOut ? null : r.exitCode,
      output,
      droppedBytes: r.output.droppedBytes,
      timedOut: r.timedOut,
      durationMs: Date.now() - started,
      ...r.stopped?.fields,
    };
  }

  private takeNote(): string {
    const note = this.note;
    this.note = '';
    return note;
  }

  /**
   * Sends one framed line and waits for its sentinel: an agent command (`wrapped`) or a raw
   * command for internal use.
   */
  private async frame(
    line: { command: string; background?: { log: string }; traceMark?: number } | { frameShell: string },
    timeoutMs: number | undefined,
    maxOutputBytes = 1024 * 1024,
    wrapped = false,
  ): Promise<{ exitCode: number; pid?: number; stateLost: boolean; output: CappedOutput; raw: Buffer; timedOut: boolean; restarted: boolean; backgroundKilledBecause?: string; stopped?: StopRequest }> {
    const nonce = this.nonce;
    const text = 'frameShell' in line ? frameShellLine(line.frameShell) : runLine(line.command, line.background, line.traceMark);
    const output = new CappedOutput(maxOutputBytes);
    let rawCollector: Buffer[] | undefined;
    if (!wrapped) {
      rawCollector = [];
      const push = output.push.bind(output);
      output.push = (b: Buffer) => {
        rawCollector!.push(Buffer.from(b));
        push(b);
      };
    }
    const done = new Promise<FrameEnd>((resolve, reject) => {
      this.pending = { nonce, marker: Buffer.from(`\n__TBRL_${nonce}__ `), output, carry: Buffer.alloc(0), resolve, reject };
    });
    // A timed-out command whose shell was restarted rejects later; nobody awaits it any more.
    done.catch(() => undefined);
    // Output printed by background jobs between commands shows up with the next command, as in a terminal.
    const stray = this.stray;
    this.stray = [];
    this.strayBytes = 0;
    for (const b of stray) this.onOutput('stdout', b);
    const sentAt = Date.now();
    this.stream!.write(`${text}\n`);

    let timer: NodeJS.Timeout | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let restarted = false;
    let backgroundKilledBecause: string | undefined;
    let stopped: StopRequest | undefined;
    // The command ends by itself, by its timeout, or by a stop request from outside (disk watchdog);
    // the last two share the kill-then-restart-if-stuck path below.
    const interrupts: Promise<Awaited<typeof done> | 'timeout' | 'stop'>[] = [done];
    if (timeoutMs && timeoutMs > 0) interrupts.push(new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), timeoutMs); }));
    let killedAfterStop: (() => void) | undefined;
    if (wrapped) {
      interrupts.push(new Promise<'stop'>((resolve) => {
        this.stopCurrent = (request) => new Promise<void>((killed) => {
          stopped = request;
          killedAfterStop = killed;
          resolve('stop');
        });
      }));
    }
    try {
      let outcome: Awaited<typeof done> | 'timeout' | 'stop' | 'stuck' = await (interrupts.length > 1 ? Promise.race(interrupts) : done);
      this.stopCurrent = undefined;
      if (outcome === 'timeout' && !wrapped) {
        // Our own framing (start-up, state capture) did not answer: restarting would loop, so give up.
        this.alive = false;
        this.stream?.destroy();
        throw new ShellUnresponsiveError(output.text());
      }
      if (outcome === 'timeout' || outcome === 'stop') {
        if (outcome === 'timeout') {
          timedOut = true;
          backgroundKilledBecause = await this.killCommand(sentAt);
        } else {
          await this.killAllButShell();
          killedAfterStop?.();
        }
        const grace = new Promise<'stuck'>((resolve) => { graceTimer = setTimeout(() => resolve('stuck'), 3000); });
        outcome = await Promise.race([done, grace]);
        if (outcome === 'stuck') {
          // The command is a shell builtin loop (nothing to kill but the shell itself): restart the shell.
          restarted = true;
          await this.restart();
          outcome = { exitCode: 137, cwd: this.cwd ?? '/', stateLost: false };
        }
      }
      const r = outcome as FrameEnd;
      this.cwd = r.cwd || this.cwd;
      return { exitCode: r.exitCode, pid: r.pid, stateLost: r.stateLost, output, raw: rawCollector ? Buffer.concat(rawCollector) : Buffer.alloc(0), timedOut, restarted, backgroundKilledBecause, stopped };
    } finally {
      this.stopCurrent = undefined;
      killedAfterStop?.();
      clearTimeout(timer);
      clearTimeout(graceTimer);
    }
  }

  /**
   * Kills the timed-out command's process tree. When the container's pids cgroup has refused forks
   * since the last look, or no exec into it could start, background processes (a fork bomb's,
   * reparented out of any command's tree) may hold every pid and no later command could fork:
   * everything but the shell is killed instead, and the reason returned for the command's note.
   */
  private async killCommand(sentAt: number): Promise<string | undefined> {
    const up = await this.auxPersistently(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'uptime']);
    // Measured after the uptime answer, so the window reaches back at least to the command's start.
    const elapsedMs = Date.now() - sentAt;
    const [ticks, refused] = up ? up.stdout.toString().trim().split(' ').map(Number) : [NaN, NaN];
    const seen = this.forksRefusedSeen;
    if (!up || refused > seen) {
      if (up) this.forksRefusedSeen = refused;
      await this.auxPersistently(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'allbut', String(this.shellPid), this.stateDir ?? '']);
      return up ? `the container's process limit refused ${refused - seen} fork(s)` : 'no process could start in the container (its process limit reached)';
    }
    // 100 ticks/s on Linux; the slack covers tick rounding between write() and fork().
    const minTicks = Math.max(0, ticks - Math.ceil(elapsedMs / 10) - 5);
    await this.auxPersistently(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'children', String(this.shellPid), String(minTicks), this.stateDir ?? '']);
    return undefined;
  }

  /**
   * An aux exec, tried up to ten times 100 ms apart until it exits 0: under a fork bomb the
   * runtime's exec can fail to start (its init cannot fork in a full pids cgroup), and each kill
   * frees pids for the next try. Undefined when none succeeded (killing is best effort; the shell
   * restart in frame() still applies).
   */
  private async auxPersistently(argv: string[]): Promise<{ exitCode: number | null; stdout: Buffer } | undefined> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const r = await this.aux(argv).catch(() => undefined);
      if (r?.exitCode === 0) return r;
      if (this.closed) return undefined;
      await new Promise((res) => setTimeout(res, 100));
    }
    return undefined;
  }

  private async restart(): Promise<void> {
    const old = this.stream;
    const oldPid = this.shellPid;
    const p = this.pending;
    this.pending = undefined;
    this.alive = false;
    this.stream = undefined;
    old?.destroy();
    try {
      if (oldPid) await this.aux(['bash', '-c', KILL_SCRIPT, 'tbrl-kill', 'tree', String(oldPid)]);
    } catch {
      /* best effort */
    }
    p?.reject(new Error('restarted'));
    this.restarts++;
    try {
      await this.ensureStarted();
    } catch (err) {
      if (!(err instanceof ShellUnresponsiveError) || this.closed) throw err;
      // Something outside the old shell's tree holds every pid (a fork bomb's reparented
      // processes): the new shell cannot fork its commands. Kill all but the entrypoint and retry once.
      await this.killAllButShell();
      this.alive = false;
      await this.ensureStarted();
    }
  }

  /** Background output between commands; only the latest bytes are kept so a chatty job cannot grow memory. */
  private pushStray(payload: Buffer): void {
    this.stray.push(Buffer.from(payload));
    this.strayBytes += payload.length;
    while (this.strayBytes > STRAY_LIMIT && this.stray.length > 1) this.strayBytes -= this.stray.shift()!.length;
  }

  private onOutput(kind: 'stdout' | 'stderr', payload: Buffer): void {
    const p = this.pending;
    if (!p) {
      this.pushStray(payload);
      return;
    }
    if (kind === 'stderr') {
      // Only the shell's own diagnostics arrive here (commands run with 2>&1); keep them visible.
      p.output.push(payload);
      return;
    }
    const buf = p.carry.length ? Buffer.concat([p.carry, payload]) : payload;
    const at = buf.indexOf(p.marker);
    if (at < 0) {
      const keep = Math.min(buf.length, p.marker.length - 1);
      p.output.push(buf.subarray(0, buf.length - keep));
      p.carry = Buffer.from(buf.subarray(buf.length - keep));
      return;
    }
    p.output.push(buf.subarray(0, at));
    const rest = buf.subarray(at + p.marker.length);
    const nl = rest.indexOf(0x0a);
    if (nl < 0) {
      p.carry = Buffer.from(buf.subarray(at));
      return;
    }
    const fields = rest.subarray(0, nl).toString('utf8');
    const sp1 = fields.indexOf(' ');
    const sp2 = fields.indexOf(' ', sp1 + 1);
    const exitCode = Number(fields.slice(0, sp1));
    const pidField = fields.slice(sp1 + 1, sp2);
    const cwd = fields.slice(sp2 + 1);
    const after = rest.subarray(nl + 1);
    if (after.length) this.pushStray(after);
    this.pending = undefined;
    p.resolve({ exitCode, pid: pidField === '-' || pidField === 'lost' ? undefined : Number(pidField), cwd, stateLost: pidField === 'lost' });
  }
}
