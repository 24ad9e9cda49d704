/*
 * tbrl-cage: the only program the frame shell (src/core/sandbox/shell.ts) executes while it holds
 * the frame nonce in memory. It reaches the container on a read-only mount the agent cannot write
 * (root in the container cannot remount it without CAP_SYS_ADMIN), is linked statically (nothing
 * of the image is loaded: no ld.so, no libc, no LD_PRELOAD honoured), and does one of:
 *
 *   cage run <cap> <program> [args...]  drop capability <cap> (a number) from the bounding,
 *                                       inheritable, permitted, effective and ambient sets, check
 *                                       that it is gone, then exec <program>. The frame shell keeps
 *                                       the capability, so the kernel refuses the program (and
 *                                       everything it starts, setuid programs included) the frame
 *                                       shell's /proc/<pid>/mem, environ and fds: ptrace access
 *                                       needs the caller's capabilities to cover the target's.
 *   cage probe <cap>                    exit 0 when <cap> can be dropped here (nothing is exec'd).
 *   cage mkdir <dir>                    mkdir -p <dir>, the last component mode 0700 (the shell's
 *                                       state directory, after the agent removed it).
 *
 * It never runs the program uncaged: if the drop fails it exits 126 with a message on stderr.
 * Built by scripts/build-cage.sh with `gcc -static -O2`.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int parse_cap(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 0 || v > 63) return -1;
  return (int)v;
}

static int drop(int cap) {
  if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return -1;
  if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0) return -1;
  /* Ambient capabilities survive exec of an unprivileged program: none are kept. */
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct head = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &head, data) != 0) return -1;
  int word = cap / 32;
  unsigned int bit = 1u << (cap % 32);
  data[word].inheritable &= ~bit;
  data[word].permitted &= ~bit;
  data[word].effective &= ~bit;
  if (syscall(SYS_capset, &head, data) != 0) return -1;
  return 0;
}

static int mkdir_p(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "run") == 0) {
    int cap = parse_cap(argv[2]);
    if (cap < 0 || drop(cap) != 0) {
      fprintf(stderr, "tbrl-cage: could not drop capability %s (%s); the command was not run\n", argv[2], strerror(errno));
      return 126;
    }
    execv(argv[3], argv + 3);
    fprintf(stderr, "tbrl-cage: %s: %s\n", argv[3], strerror(errno));
    return errno == ENOENT ? 127 : 126;
  }
  if (argc == 3 && strcmp(argv[1], "probe") == 0) {
    int cap = parse_cap(argv[2]);
    return cap >= 0 && drop(cap) == 0 ? 0 : 1;
  }
  if (argc == 3 && strcmp(argv[1], "mkdir") == 0) return mkdir_p(argv[2]) == 0 ? 0 : 1;
  fprintf(stderr, "usage: cage run <cap> <program> [args...] | cage probe <cap> | cage mkdir <dir>\n");
  return 2;
}
