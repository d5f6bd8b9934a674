#!/usr/bin/env python
"""Run one job's command inside its era's Docker image, and record which image that was.

With ``runner: docker`` the workflow's cell and reference jobs call this on the host, e.g.

    python scripts/rules/run_in_docker.py --image duel/current-cpu:TAG --device cpu --threads 2 \\
        --checkout /path/to/duel --record-image -- python scripts/cell/run_cell.py ...

How the container is made: duel/host/stacks/docker_run.py (``duel image run`` by hand). The exit
status is the container's.
"""
import argparse
import os
import sys

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # holds duel/
sys.path.insert(0, SCRIPTS)

from duel.host.stacks import docker_run, images  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    docker_run.add_arguments(parser)
    args = parser.parse_args(argv)
    docker_run.check_command(parser, args)
    return args


def main(argv=None):
    try:
        return docker_run.run(parse_args(argv))
    except images.ImageError as error:
        sys.stderr.write("run_in_docker: %s\n" % error)
        return 1


if __name__ == "__main__":
    sys.exit(main())
