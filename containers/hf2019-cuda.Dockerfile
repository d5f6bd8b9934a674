# Era "hf2019" on an NVIDIA GPU: TensorFlow's official 2.0.0 GPU image of that time (Ubuntu 18.04,
# CUDA 10.0, cuDNN 7, Python 3.6, tensorflow-gpu 2.0.0) plus exactly the pins of
# envs/hf2019-cuda.txt, installed with --no-deps into its Python. torch 1.3.0's wheel brings its
# own CUDA 10.1 runtime, so PyTorch needs nothing from the base; the other official image of the
# time, pytorch/pytorch:1.3-cuda10.1-cudnn7-runtime, lacks the CUDA 10.0 that TensorFlow 2.0
# needs, hence this base. Built by scripts/build_image.py (containers/README.md).
ARG BASE=tensorflow/tensorflow:2.0.0-gpu-py3
FROM ${BASE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PATH=/opt/duel/bin:$PATH HOME=/tmp
LABEL org.opencontainers.image.title="duel hf2019-cuda" \
      org.opencontainers.image.description="Duel benchmark cells, era hf2019 (October 2019), CUDA"
COPY envs/hf2019-cuda.txt /opt/duel/lock.txt
COPY build/ /tmp/duel-build/
RUN python3 -m pip install --no-cache-dir --disable-pip-version-check \
        --cert /tmp/duel-build/ca-certificates.crt \
        "$(grep -E '^pip==' /opt/duel/lock.txt)" \
    && python3 -m pip install --no-cache-dir --disable-pip-version-check \
        --cert /tmp/duel-build/ca-certificates.crt --find-links /tmp/duel-build/wheels \
        --no-deps -r /opt/duel/lock.txt \
    && python3 -m pip check \
    && python3 -m pip freeze > /opt/duel/pip-freeze.txt \
    && mkdir -p /opt/duel/bin && ln -s "$(command -v python3)" /opt/duel/bin/python \
    && rm -rf /tmp/duel-build
