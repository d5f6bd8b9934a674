# Era "hf2019" on the CPU: Python 3.7 (as the workflow's own hf2019 venv) and exactly the pins of
# envs/hf2019.txt, installed with --no-deps like that venv (rule build_era_env).
# Built by `duel image build` (containers/README.md).
ARG BASE=python:3.7.16-slim-bullseye
FROM ${BASE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PATH=/opt/duel/bin:$PATH HOME=/tmp
LABEL org.opencontainers.image.title="duel hf2019-cpu" \
      org.opencontainers.image.description="Duel benchmark cells, era hf2019 (October 2019), CPU"
COPY envs/hf2019.txt /opt/duel/lock.txt
COPY build/ /tmp/duel-build/
# `duel image build` sets PIP_NO_INDEX=1 when build/wheels holds a wheel of every pin (e.g. from
# its --wheel-cache): pip then installs those files and asks no registry (it would otherwise take
# the registry's copy of a wheel it also finds here). Unset, pip takes what it lacks from there.
ARG PIP_NO_INDEX
RUN python3 -m venv /opt/duel \
    && /opt/duel/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
        --cert /tmp/duel-build/ca-certificates.crt --find-links /tmp/duel-build/wheels \
        --no-deps -r /opt/duel/lock.txt \
    && /opt/duel/bin/python -m pip check \
    && /opt/duel/bin/python -m pip freeze > /opt/duel/pip-freeze.txt \
    && rm -rf /tmp/duel-build
