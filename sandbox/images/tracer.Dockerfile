# Helper that traces a task container from outside it (started with --pid=container:<task>
# and --cap-add SYS_PTRACE), so task images need not ship strace. strace 6.1 supports --seccomp-bpf.
FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends strace \
    && rm -rf /var/lib/apt/lists/*
