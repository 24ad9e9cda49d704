# Stand-in for python:3.x-slim and Terminal-Bench's python-3-13 image (Debian's Python 3.11).
FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 python3-pip python3-venv python3-pytest ca-certificates curl procps tmux \
    && ln -sf /usr/bin/python3 /usr/local/bin/python \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
