# Era "hf2019" on an NVIDIA GPU: TensorFlow's official 2.0.0 GPU image of that time, for the
# CUDA 10.0 and cuDNN 7.6 that TensorFlow 2.0 was built against (torch 1.3.0's wheel carries its
# own CUDA 10.1 runtime), with Ubuntu 18.04's Python 3.7 in a venv holding exactly the pins of
# envs/hf2019-cuda.txt, installed with --no-deps as the workflow's hf2019 venvs are. The base's
# own Python 3.6 and TensorFlow stay unused. Built by `duel image build` (containers/README.md).
ARG BASE=tensorflow/tensorflow:2.0.0-gpu-py3
FROM ${BASE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PATH=/opt/duel/bin:$PATH HOME=/tmp
LABEL org.opencontainers.image.title="duel hf2019-cuda" \
      org.opencontainers.image.description="Duel benchmark cells, era hf2019 (October 2019), CUDA"
ARG DEBIAN_FRONTEND=noninteractive
# The base's NVIDIA apt sources are signed with keys NVIDIA has since replaced; Ubuntu's suffice.
RUN rm -f /etc/apt/sources.list.d/cuda.list /etc/apt/sources.list.d/nvidia-ml.list \
    && apt-get update \
    && apt-get install -y --no-install-recommends python3.7 python3.7-venv \
    && rm -rf /var/lib/apt/lists/*

COPY envs/hf2019-cuda.txt /opt/duel/lock.txt
COPY build/ /tmp/duel-build/
# pip 24.0 (the last for Python 3.7) first: the venv's own pip predates manylinux2014 wheels.
RUN python3.7 -m venv /opt/duel \
    && /opt/duel/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
        --cert /tmp/duel-build/ca-certificates.crt pip==24.0 \
    && /opt/duel/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
        --cert /tmp/duel-build/ca-certificates.crt --find-links /tmp/duel-build/wheels \
        --no-deps -r /opt/duel/lock.txt \
    && /opt/duel/bin/python -m pip check \
    && /opt/duel/bin/python -m pip freeze > /opt/duel/pip-freeze.txt \
    && rm -rf /tmp/duel-build
