"""Make one model's shared weights (PyTorch and TensorFlow) and PyTorch eager reference outputs.

Runs in an era's environment (both frameworks needed), e.g.

    python -m duel.cell.commands.make_reference --model-config config/models/gpt2.json \\
        --sequence-lengths 8,128 --output-dir /tmp/gpt2-reference

See duel/cell/reference.py. Python 3.6-compatible, like every in-cell script.
"""
import time

STARTED = time.time()  # the job's wall time, imports included, goes into the manifest

import argparse  # noqa: E402
import sys  # noqa: E402


def main(argv=None):
    from duel.cell.process import positive_ints, prepare_process

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-config", required=True, help="a config/models/*.json file")
    parser.add_argument("--sequence-lengths", type=positive_ints, default=[8])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--training-weights", action="store_true",
                        help="make the language-modelling models training cells start from "
                             "(training.json) instead of the inference reference")
    parser.add_argument("--generation", action="store_true",
                        help="make the causal language model generation cells start from and "
                             "its greedy tokens for each length (generation.json)")
    parser.add_argument("--new-tokens", type=int, default=32,
                        help="--generation: the tokens generated after each prompt")
    args = parser.parse_args(argv)

    from duel.cell import environment, models

    prepare_process("both", "cpu", args.threads or environment.usable_cpus())
    from duel.cell import reference, sweep

    spec = models.load_model_spec(args.model_config)
    if args.training_weights:
        manifest = reference.make_training_weights(spec, args.seed, args.output_dir,
                                                   started=STARTED)
        sys.stderr.write("training weights for %s: %s\n" % (spec.name, manifest["heads"]))
        return 0
    if args.generation:
        manifest = reference.make_generation_reference(
            spec, args.seed, args.sequence_lengths, args.new_tokens, args.output_dir,
            sweep.token_ids, started=STARTED)
        sys.stderr.write("generation reference for %s: lengths %s, failed %s\n"
                         % (spec.name, manifest["lengths"], manifest["failed"]))
        return 0
    manifest = reference.make_reference(spec, args.seed, args.sequence_lengths, args.output_dir,
                                        sweep.token_ids, started=STARTED)
    sys.stderr.write("reference for %s: lengths %s, failed %s\n"
                     % (spec.name, manifest["lengths"], manifest["failed"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
