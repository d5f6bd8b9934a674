# Era "current" on an NVIDIA GPU: Debian bookworm's Python 3.11 and exactly the pins of
# envs/current-cuda.txt, installed with --no-deps (the lock file is complete). Its CUDA libraries
# come with it as packages (torch's CUDA 13 build, TensorFlow's CUDA 12 set: tensorflow[and-cuda]),
# so the base needs no CUDA of its own, only the NVIDIA driver, which `docker run --gpus all`
# (runner docker does that for cuda cells) or `apptainer --nv` brings in from the host.
# Built by `duel image build` (containers/README.md); --local-base works as for current-cuda.
ARG BASE=debian:12.7-slim
FROM ${BASE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PATH=/opt/duel/bin:$PATH HOME=/tmp \
    NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
LABEL org.opencontainers.image.title="duel current-cuda" \
      org.opencontainers.image.description="Duel benchmark cells, era current, CUDA"
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/*

COPY envs/current-cuda.txt /opt/duel/lock.txt
COPY build/ /tmp/duel-build/
RUN python3 -m venv /opt/duel \
    && /opt/duel/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
        --cert /tmp/duel-build/ca-certificates.crt --find-links /tmp/duel-build/wheels \
        --no-deps -r /opt/duel/lock.txt \
    && /opt/duel/bin/python -m pip check \
    && /opt/duel/bin/python -m pip freeze > /opt/duel/pip-freeze.txt \
    && rm -rf /tmp/duel-build
