"""``duel bisect``: the release of a framework where a point got clearly faster or slower."""
import os
import re

from duel.host.bisect import bisection, search
from duel.host.cli import command, history, lock, store
from duel.host.render import bisection as bisection_view
from duel.host.stacks import as_of, eras, releases
from duel.host.store import archive
from duel.host.verdicts import statistics

DESCRIPTION = """Name the release of a framework where POINT got clearly faster or slower.

FROM and TO are eras of envs/eras.yaml (their own stacks), dates (the release out by then) or
releases (a minor is its newest patch). The framework's minor releases between them are measured
only as a bisection needs: the ends, then halves, each clear change followed down to two
adjacent releases. Each release runs in an era made for it: its lock as the package index stood
on its day, the other framework, transformers and the Python held at FROM's where wheels allow.
Each measurement is a workflow run of the point alone, added to the results store, with the
method, processes and settling of any run; a release measured before on this machine is not run
again, so an interrupted bisection resumes. A release that will not install or measure is
skipped, with its reason. POINT is %s.""" % (history.questions.POINT_SYNTAX)
SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def add(subparsers):
    parser = command.add(
        subparsers, "bisect", DESCRIPTION,
        {command.FINE: "the answer is written (a step found or not)",
         command.BAD_INPUT: None,
         command.FAILED: "an end could not be measured, or the index could not be read"},
        ["duel bisect bert-base-cased/tensorflow/function/1x128 --from hf2019 --to hf2023",
         "duel bisect bert-base-cased/pytorch/eager/1x128 --from 1.3 --to 2.13 --dry-run"])
    parser.add_argument("point", type=history.points, metavar="POINT")
    parser.add_argument("--from", dest="start", required=True, metavar="FROM",
                        help="the older end: an era, a date (YYYY-MM-DD) or a release")
    parser.add_argument("--to", dest="end", required=True, metavar="TO",
                        help="the newer end: an era, a date or a release")
    parser.add_argument("--output", metavar="DIR", default=None,
                        help="the bisection's folder, whose name its answer has in the store "
                             "(default: bisect/<point>-<from>-<to>)")
    store.store_option(parser)
    parser.add_argument("--min-effect", type=float, default=statistics.MIN_EFFECT,
                        help="smallest relative step called clear (default %(default)s)")
    parser.add_argument("--remeasure", action="store_true",
                        help="measure every release again in fresh processes: only runs made "
                             "since the folder's first --remeasure count (a rerun that checks "
                             "the answer, and resumes like any bisection)")
    parser.add_argument("--dry-run", action="store_true",
                        help="list the releases and what each costs; build and measure nothing")
    parser.add_argument("--uv", default=lock.default_uv(), help="the uv executable")
    parser.set_defaults(func=run)


def name_of(point, start, end):
    return SLUG.sub("-", "%s-%s-%s-%dx%d-%s-%s" % (point.model, point.framework, point.mode,
                                                    point.batch_size, point.seq_len, start, end))


def run(args):
    folder = os.path.abspath(args.output or os.path.join(
        "bisect", name_of(args.point, args.start, args.end)))
    name = SLUG.sub("-", os.path.basename(folder))  # the answer's name in the store
    target = archive.locate(args.store)
    try:
        if args.dry_run:
            sequence, page = bisection.plan(args.point.framework, args.start, args.end,
                                            command.CHECKOUT)
            bisection.dry_run(args.point.framework, sequence, page, command.CHECKOUT, print)
            return command.FINE
        if os.path.isdir(target):
            archive.version(target)
        else:
            archive.create(target)
        record = bisection.run(args.point, args.start, args.end, folder, target,
                               command.CHECKOUT, args.uv, name, args.min_effect,
                               args.remeasure)
    except (as_of.AsOfError, eras.EraError, archive.StoreError) as error:
        raise command.Refusal(str(error))
    except (releases.ReleaseError, search.Skip) as error:
        raise command.Failure(str(error))
    print("\n".join(bisection_view.lines(record)))
    print("answer: %s (table %s, chart %s)" % (os.path.join(folder, bisection_view.FILE),
                                                bisection_view.TABLE, bisection_view.CHART))
    return command.FINE
