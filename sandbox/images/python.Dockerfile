# Stand-in for python:3.x(-slim) and Terminal-Bench's python-3-13 image, built on Debian's Python 3.11.
# Made to behave like the official image for what task Dockerfiles do with it: `pip install` works
# (PEP 668 marker removed, as the official image has none), `python`/`pip` are on PATH, headers and a
# compiler are there for packages that build C extensions, and uv/uvx and pytest come from PyPI.
FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 python3-pip python3-venv python3-pytest python3-dev gcc g++ make libc6-dev \
      ca-certificates curl git procps tmux \
    && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED \
    && ln -sf /usr/bin/python3 /usr/local/bin/python \
    && ln -sf /usr/bin/pip3 /usr/local/bin/pip \
    && rm -rf /var/lib/apt/lists/*
# standin/ is filled by scripts/build-standins.mjs: wheels downloaded on the host (so no registry is
# needed from inside the build) and the host's CA bundle (a TLS-intercepting proxy's root included).
COPY standin/ /tmp/standin/
RUN if [ -s /tmp/standin/host-ca.crt ]; then cat /tmp/standin/host-ca.crt >> /etc/ssl/certs/ca-certificates.crt; fi \
    && { pip install -q --no-cache-dir --no-index --find-links /tmp/standin/wheels uv==0.13.9 pytest==8.4.2 \
         || pip install -q --no-cache-dir uv==0.13.9 pytest==8.4.2 \
         || echo "stand-in: no wheels and no package index, so no uv (pytest comes from Debian)"; } \
    && rm -rf /tmp/standin && pytest --version
# Tools that bring their own CA list (uv, requests from a task's own install) use the system bundle.
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /app
