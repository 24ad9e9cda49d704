# Stand-in for ubuntu:* and Terminal-Bench's ubuntu-24-04 image.
FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates curl procps tmux \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
