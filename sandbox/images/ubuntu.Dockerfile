# Stand-in for ubuntu:* and Terminal-Bench's ubuntu-24-04 image: Debian with python3 (PEP 668 marker
# kept, as on Ubuntu 24.04), tmux and curl.
FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 python3-pip python3-venv ca-certificates curl procps tmux \
    && rm -rf /var/lib/apt/lists/*
COPY standin/ /tmp/standin/
RUN if [ -s /tmp/standin/host-ca.crt ]; then cat /tmp/standin/host-ca.crt >> /etc/ssl/certs/ca-certificates.crt; fi && rm -rf /tmp/standin
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /app
