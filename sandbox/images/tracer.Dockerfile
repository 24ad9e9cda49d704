# Helper that traces a task container from outside it (started with --pid=container:<task>
# and --cap-add SYS_PTRACE), so task images need not ship strace. strace 6.1 supports --seccomp-bpf.
# /.tbrl-strace is strace with its own loader and libraries, relocatable into any glibc or musl
# task container of the same architecture: run as `/.tbrl-strace/ld.so --library-path /.tbrl-strace/lib /.tbrl-strace/strace`
# it lets the persistent shell start under strace, where --seccomp-bpf applies.
FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends strace \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /.tbrl-strace/lib \
    && cp /usr/bin/strace /.tbrl-strace/ \
    && for l in $(ldd /usr/bin/strace | grep -o '/[^ ]*\.so[^ ]*'); do cp -L "$l" /.tbrl-strace/lib/; done \
    && cp -L "$(ldd /usr/bin/strace | grep -o '/[^ ]*ld-linux[^ ]*' | head -1)" /.tbrl-strace/ld.so
