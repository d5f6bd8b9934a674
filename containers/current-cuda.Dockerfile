# Era "current" on an NVIDIA GPU: an official CUDA 12 + cuDNN runtime base, Ubuntu 24.04's
# Python 3.12 and exactly the pins of envs/current-cuda.txt (the versions of envs/current-cpu.txt;
# torch from the registry is its CUDA build, TensorFlow finds CUDA and cuDNN in the base).
# Built by scripts/build_image.py (containers/README.md); run with `docker run --gpus all`
# (runner docker does that for cuda cells).
ARG BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
FROM ${BASE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PATH=/opt/duel/bin:$PATH HOME=/tmp
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
        -r /opt/duel/lock.txt \
    && /opt/duel/bin/python -m pip check \
    && /opt/duel/bin/python -m pip freeze > /opt/duel/pip-freeze.txt \
    && rm -rf /tmp/duel-build
