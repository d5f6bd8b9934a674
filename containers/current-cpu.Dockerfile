# Era "current" on the CPU: Debian bookworm's Python 3.11 and exactly the pins of
# envs/current-cpu.txt (the stack of the workflow's own .venv).
# Built by `duel image build` (containers/README.md), which puts the lock file, wheels from
# this machine's disk (the CPU build of torch) and the host's CA bundle into the context, and may
# swap BASE for a Debian bookworm image made locally with debootstrap (no registry needed).
ARG BASE=debian:12.7-slim
FROM ${BASE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PATH=/opt/duel/bin:$PATH HOME=/tmp
LABEL org.opencontainers.image.title="duel current-cpu" \
      org.opencontainers.image.description="Duel benchmark cells, era current, CPU"
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/*

COPY envs/current-cpu.txt /opt/duel/lock.txt
COPY build/ /tmp/duel-build/
RUN python3 -m venv /opt/duel \
    && /opt/duel/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
        --cert /tmp/duel-build/ca-certificates.crt --find-links /tmp/duel-build/wheels \
        --require-hashes --no-deps -r /opt/duel/lock.txt \
    && /opt/duel/bin/python -m pip check \
    && /opt/duel/bin/python -m pip freeze > /opt/duel/pip-freeze.txt \
    && rm -rf /tmp/duel-build
