"""Export one model's shared weights to a deployment format (duel/cell/export.py), e.g.

    python -m duel.cell.commands.export_artifacts --format torchscript \\
        --model-config config/models/gpt2.json --reference-dir results/reference/current/gpt2 \\
        --batch-sizes 1 --sequence-lengths 8,128 --output-dir /tmp/gpt2-torchscript

Runs in the era's environment, like run_cell (Python 3.6 and up).
"""
import argparse
import sys


def main(argv=None):
    from duel.cell.modes import ARTIFACT_FORMATS
    from duel.cell.process import positive_ints, prepare_process

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", required=True, choices=list(ARTIFACT_FORMATS))
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--model-config", required=True)
    parser.add_argument("--reference-dir", required=True, help="the model's shared weights")
    parser.add_argument("--batch-sizes", type=positive_ints, default=[1])
    parser.add_argument("--sequence-lengths", type=positive_ints, default=[8])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--output-dir", required=True)
    args = parser.parse_args(argv)

    from duel.cell import environment, export, models

    threads = args.threads or environment.usable_cpus()
    prepare_process(ARTIFACT_FORMATS[args.format].framework, args.device, threads)
    spec = models.load_model_spec(args.model_config)
    shapes = [(batch, length) for batch in args.batch_sizes for length in args.sequence_lengths]
    manifest = export.export_artifacts(args.format, spec, shapes, args.seed, args.reference_dir,
                                       args.device, threads, args.output_dir)
    for key, entry in sorted(manifest["artifacts"].items()):
        sys.stderr.write("%s %s: %s %s\n" % (spec.name, key, entry["status"],
                                             entry.get("message") or "%d bytes in %.1f s" % (
                                                 entry["bytes"], entry["export_s"])))
    if manifest["skipped"] or manifest.get("error"):
        sys.stderr.write("%s\n" % (manifest["skipped"] or manifest["error"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
