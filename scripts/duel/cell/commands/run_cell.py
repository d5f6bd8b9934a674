"""Run one benchmark cell and write its Parquet shard.

A job measures one era x device x framework x task x model in one or more modes (``--mode
eager+function``: the modes that share a process, duel/cell/modes.py); it sweeps every batch
size x sequence length x timing method of each mode in turn inside one fresh process (imports
and the model build are paid once), and each row is its mode's. That process judges each point as it measures it (conditions.Judge: the host's steal
time, other processes on its CPUs, the canary against its own spread on this host) and measures
a disturbed point again at once, ``--remeasures`` times at most; a point still disturbed runs
again in another fresh process, ``--attempts`` processes at most, while the run's budget of
fresh processes lasts (``--fresh-processes``). A measuring process writes each point as it
measures it (duel/cell/journal.py): one killed mid-sweep, or stopped by its job past a point's
time limit, keeps every finished point, the point it was running becomes a ``killed``, ``oom``
or ``timeout`` row, and a fresh process measures the points left. The shard keeps every row, and
only each point's last counts. The workflow runs this script once per cell;
it also runs by hand, e.g.

    python -m duel.cell.commands.run_cell --framework pytorch --mode eager \\
        --model-config config/models/gpt2.json --batch-sizes 1 --sequence-lengths 8,64 \\
        --output /tmp/gpt2.parquet

This file and everything it imports run in the oldest era too (Python 3.6, see duel/cell).
"""
import time

STARTED = time.time()  # this process's start, before its imports: start-up is a measured cost

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from collections import OrderedDict  # noqa: E402


from duel.cell.adapters.deployed import is_deployed  # noqa: E402
from duel.cell import contract  # noqa: E402
from duel.cell.contract import METHODS, RENAMED_METHODS, method_name  # noqa: E402
from duel.cell.modes import (DEPLOYED, DEPLOYED_CPP, by_framework, frameworks, members,  # noqa: E402
                             mode_names, process_groups)
from duel.cell.process import positive_ints, prepare_process  # noqa: E402


def names(text):
    """'duel,timeit' -> ['duel', 'timeit']."""
    return [part.strip() for part in text.split(",") if part.strip()]


def point_list(text):
    """'1x8:duel,function:2x64:timeit' -> {(1, 8, 'duel', None), (2, 64, 'timeit', 'function')}
    (an argparse type): a point without a mode is every mode's."""
    points = set()
    for part in names(text):
        try:
            words = part.split(":")
            mode = words.pop(0) if len(words) == 3 else None
            size, method = words
            batch, length = size.split("x")
            points.add((int(batch), int(length), method_name(method), mode))
        except ValueError:
            raise argparse.ArgumentTypeError("expected [MODE:]BATCHxLENGTH:METHOD, got %r"
                                             % part)
    return points


def point_word(point):
    """A point (sweep.Point) as point_list reads it: 'function:2x64:timeit'."""
    word = "%dx%d:%s" % tuple(point[:3])
    return "%s:%s" % (point[3], word) if len(point) > 3 and point[3] else word


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cell = parser.add_argument_group("the cell")
    cell.add_argument("--era", default="current", help="era label recorded in the shard")
    cell.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                      help="cuda: the first GPU (a cpu cell hides every GPU from the frameworks)")
    cell.add_argument("--framework", required=True, choices=frameworks())
    cell.add_argument("--mode", default="eager", help="one mode, or modes that share a process "
                      "joined by '+' (eager+function); " + "; ".join(
                          "%s: %s" % (framework, ", ".join(names))
                          for framework, names in by_framework().items()))
    cell.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"],
                      help="fp16/bf16: mixed precision (autocast, Keras policies)")
    cell.add_argument("--tf32", default="off", choices=["on", "off"],
                      help="fp32 matrix products in TF32 on Ampere+ GPUs, in both frameworks "
                           "(default off: strict fp32)")
    cell.add_argument("--task", default="inference",
                      choices=["inference", "training", "generation"],
                      help="training: one optimiser step per call (model with its LM head); "
                           "generation: greedy generate of the causal LM, --new-tokens a call")
    cell.add_argument("--model-config", required=True, help="a config/models/*.json file")
    cell.add_argument("--replicate", type=int, default=1,
                      help="which of the cell's separate processes this is (recorded; the same "
                           "seed, weights and inputs in every replicate)")
    grid = parser.add_argument_group("the grid")
    grid.add_argument("--batch-sizes", type=positive_ints, default=[1], help="e.g. 1,2,4,8")
    grid.add_argument("--sequence-lengths", type=positive_ints, default=[8], help="e.g. 8,64")
    grid.add_argument("--methods", type=names, default=["duel"], help="duel, timeit or both")
    grid.add_argument("--seed", type=int, default=0, help="seeds weights and input token ids")
    grid.add_argument("--reference-dir", default=None,
                      help="shared weights and reference outputs (duel.cell.commands.make_reference); "
                           "without it the model is built from the seed and not checked")
    grid.add_argument("--threads", type=int, default=None, help="default: all usable CPUs")
    duel = parser.add_argument_group("method duel")
    duel.add_argument("--warmup-calls", type=int, default=3,
                      help="untimed calls per point; the first call is untimed even at 0")
    duel.add_argument("--warmup-time-s", type=float, default=0.5,
                      help="warm-up stops early once the calls after the first took this long "
                           "(0: by count alone)")
    duel.add_argument("--min-samples", type=int, default=5,
                      help="the fewest samples a point takes (default 5)")
    duel.add_argument("--min-time-s", type=float, default=0.0)
    duel.add_argument("--noise-ratio", type=float, default=0.8,
                      help="variance of one sample over the variance between processes (logs), "
                           "which sizes a point's samples against its fixed cost "
                           "(duel/cell/timing.py planned_samples); 0: --min-samples alone")
    duel.add_argument("--max-samples", type=int, default=1000)
    duel.add_argument("--max-time-s", type=float, default=60.0)
    grid.add_argument("--learning-rate", type=float, default=1e-4,
                      help="task training: Adam's learning rate")
    grid.add_argument("--new-tokens", type=int, default=32,
                      help="task generation: the tokens each call generates after its prompt")
    timeit = parser.add_argument_group("method timeit (the 2019 script's loop)")
    timeit.add_argument("--repeat", type=int, default=30, help="timeit repeat (2019: 30)")
    timeit.add_argument("--number", type=int, default=3, help="timeit number (2019: 3)")
    recorded = parser.add_argument_group("recorded as they are")
    recorded.add_argument("--runner", default="native")
    recorded.add_argument("--image", default=None)
    recorded.add_argument("--image-digest", default=None)
    recorded.add_argument("--accept-drift", action="store_true",
                          help="the run accepted a workflow environment that differs from its "
                               "lock file (config key accept_drift); recorded in every row")
    recorded.add_argument("--lock-file", default=None,
                          help="the era's lock file where it is not envs/<era>[-<device>].txt "
                               "(an era a bisection made)")
    deployed = parser.add_argument_group(
        "deployment modes (%s)" % ", ".join(mode_names(kinds=DEPLOYED)))
    deployed.add_argument("--artifact-dir", default=None,
                          help="the exported artifacts (duel.cell.commands.export_artifacts)")
    deployed.add_argument("--runner-build", default=None,
                          help="%s: the runner's build record "
                               "(build.json, duel.cell.commands.build_runner)"
                               % ", ".join(mode_names(kinds=(DEPLOYED_CPP,))))
    disturbed = parser.add_argument_group(
        "disturbed points (conditions.disturbance; 0 switches a limit off)")
    disturbed.add_argument("--max-steal-share", type=float, default=0.05,
                           help="the host's steal time over the point's CPU time")
    disturbed.add_argument("--max-other-share", type=float, default=0.05,
                           help="other processes' CPU time on the point's CPUs over one CPU's")
    disturbed.add_argument("--max-canary-score", type=float, default=3.5,
                           help="the canary around the point in robust spreads above the "
                                "median of this process's canary readings")
    disturbed.add_argument("--calibrate", choices=["on", "off"], default="on",
                           help="time the canary back to back once the model is built, so the "
                                "first points are judged against this host's spread")
    disturbed.add_argument("--remeasures", type=int, default=0,
                           help="times a disturbed point is measured again in the same process "
                                "(default 0; the workflow gives config disturbance's)")
    disturbed.add_argument("--attempts", type=int, default=1,
                           help="processes per job at most, the first included (default 1: no "
                                "point runs again; the workflow gives config disturbance's)")
    disturbed.add_argument("--fresh-processes", default=None, metavar="FOLDER",
                           help="the run's budget of fresh processes for disturbed points (a "
                                "folder holding a file 'budget'; default: no budget)")
    disturbed.add_argument("--point-time-limit", type=float, default=0.0, metavar="FACTOR",
                           help="stop a point that runs longer than FACTOR times the plan's "
                                "estimate of it (duel/cell/estimate.py): a timeout row, and the "
                                "job goes on (default 0: no limit)")
    disturbed.add_argument("--attempt", type=int, default=None,
                           help="measure in this process as attempt N and write its rows (the "
                                "job's own processes are started with it)")
    grid.add_argument("--points", type=point_list, default=None,
                      help="only these points of the grid, e.g. 1x8:duel,function:2x64:duel (a "
                           "point without a mode is every mode's; a settling round measures "
                           "only its open verdicts' points)")
    parser.add_argument("--progress-fd", type=int, default=None,
                        help="an open file descriptor that gets a line per finished point too "
                             "(the workflow's console), besides standard error")
    parser.add_argument("--output", required=True, help="the Parquet shard to write")
    args = parser.parse_args(argv)
    args.modes = members(args.mode)
    known = mode_names(args.framework)
    unknown = [mode for mode in args.modes if mode not in known]
    if unknown:
        parser.error("unknown %s mode %s (modes: %s)" % (args.framework, ", ".join(unknown),
                                                          ", ".join(known)))
    if len(args.modes) > 1 and [tuple(args.modes)] != process_groups(args.framework, args.modes):
        parser.error("modes %s do not share a process (duel/cell/modes.py process_groups)"
                     % args.mode)
    if is_deployed(args.mode) and not args.artifact_dir:
        parser.error("mode %s needs --artifact-dir" % args.mode)
    for method in args.methods:
        if method in RENAMED_METHODS:
            sys.stderr.write("run_cell: method %r is now called %r (deprecated spelling)\n"
                             % (method, method_name(method)))
        elif method not in METHODS:
            parser.error("unknown method %r (methods: %s)" % (method, ", ".join(METHODS)))
    args.methods = [method_name(method) for method in args.methods]
    return args


def settings_digest(args, spec, mode):
    """SHA-256 of everything that determines the numbers of ``mode`` (not where they are
    written, nor which modes share its process): a mode measured beside others has the digest
    it has alone."""
    settings = dict(vars(args), mode=mode)
    settings.pop("modes")
    # not what the numbers depend on
    for where in ("output", "reference_dir", "replicate", "artifact_dir", "runner_build",
                  "attempt", "points", "fresh_processes", "point_time_limit"):
        settings.pop(where)
    for recorded in ("accept_drift", "lock_file"):  # recorded, but they change no number
        settings.pop(recorded)
    settings["architecture"] = spec.architecture
    settings["max_sequence_length"] = spec.max_sequence_length
    encoded = json.dumps(settings, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.attempt is None:
        return run_job(args, argv)
    return measure(args)


def attempt_command(argv, attempt, points, output):
    """The command line of the job's process number ``attempt``: this script with the job's own
    arguments, measuring ``points`` (None: all) into ``output``."""
    kept, skip = [], False
    for argument in argv:
        if skip:
            skip = False
        elif argument in ("--output", "--attempt", "--points"):
            skip = True
        elif not argument.startswith(("--output=", "--attempt=", "--points=")):
            kept.append(argument)
    command = [sys.executable, "-m", "duel.cell.commands.run_cell"] + kept
    command += ["--attempt", str(attempt), "--output", output]
    if points:
        command += ["--points", ",".join(sorted(point_word(point) for point in points))]
    return command


def progress_fds(args):
    """The progress descriptor, when it is open (a container started by the job may not have
    it), for the job's processes to inherit."""
    if args.progress_fd is None:
        return ()
    try:
        os.fstat(args.progress_fd)
    except OSError:
        return ()
    return (args.progress_fd,)


POLL_S = 1.0  # how often a job with a point time limit looks at its process's current point


def run_attempt(command, fds, journal_path, limited):
    """Run one measuring process; with a point time limit (``limited``), stop it (SIGKILL) once
    its current point passes the limit. (Its exit status, the seconds the stopped point had
    run, or None.)"""
    from duel.cell import journal

    process = subprocess.Popen(command, pass_fds=fds)
    if not limited:
        return process.wait(), None
    follower = journal.Follower(journal_path)
    while True:
        try:
            return process.wait(timeout=POLL_S), None
        except subprocess.TimeoutExpired:
            pass
        current = follower.running()
        if current and current[2] and time.time() - current[1] > current[2]:
            process.kill()
            return process.wait(), time.time() - current[1]


def run_job(args, argv):
    """Measure the cell in fresh processes until no counted point is disturbed, ``--attempts``
    processes have run or the run's budget of fresh processes is spent; a process that ends
    mid-sweep leaves its points and a row for the one it was running, and a fresh process
    measures the rest. Write every row to the shard."""
    from duel.cell import attempts, environment, journal, shard

    sys.stderr.write(environment.RUNS_ON + environment.where() + "\n")
    sys.stderr.flush()
    limits = job_limits(args)
    rows, points = [], args.points
    attempt = 0
    while True:
        attempt += 1
        partial = "%s.attempt-%d" % (args.output, attempt)
        journal_path = journal.path_of(partial)
        oom_before = journal.oom_kills()
        status, stopped_after = run_attempt(attempt_command(argv, attempt, points, partial),
                                            progress_fds(args), journal_path,
                                            args.point_time_limit > 0)
        left = []
        if status == 0 and os.path.exists(partial):
            rows += shard.read_rows(partial)
            os.remove(partial)
        else:
            record = journal.read(journal_path)
            if not record.begun:
                if os.path.exists(journal_path):
                    os.remove(journal_path)
                if attempt == 1:
                    return status or 1
                sys.stderr.write("run_cell: attempt %d ended with status %d; the rows of the "
                                 "attempts before it stand\n" % (attempt, status))
                break
            rows += record.rows
            current = journal.running(record)
            if current:
                oom_after = journal.oom_kills()
                rows.append(journal.lost_row(
                    record, current[0], status, stopped_after, current[2],
                    oom_before is not None and oom_after is not None and oom_after > oom_before))
                from duel.cell import sweep

                sys.stderr.write("run_cell: %s\n" % sweep.point_line(rows[-1]))
            left = journal.left(record)
            if left:
                sys.stderr.write("run_cell: %d point(s) left; measured in a fresh process "
                                 "(attempt %d)\n" % (len(left), attempt + 1))
        if os.path.exists(journal_path):
            os.remove(journal_path)
        again = attempts.judge(rows, limits)
        if left:
            points = set(left) | again
            continue
        if not again:
            break
        if not attempts.take_fresh_process(args.fresh_processes):
            sys.stderr.write("run_cell: %d point(s) still disturbed; the run's fresh processes "
                             "for disturbed points are spent, so they count as measured\n"
                             % len(again))
            break
        points = again
        sys.stderr.write("run_cell: %d disturbed point(s) run again in a fresh process "
                         "(attempt %d)\n" % (len(again), attempt + 1))
    job_wall_s = time.time() - STARTED
    for row in rows:
        row["job_wall_s"] = job_wall_s
    shard.write_shard(rows, args.output)
    counted = [row for row in rows if row["counted"]]
    failed = sum(1 for row in counted if row["status"] in contract.FAILED)
    sys.stderr.write("wrote %s: %d points, %d failed, %d rows of %d attempt(s)\n"
                     % (args.output, len(counted), failed, len(rows), attempt))
    return 0


def job_limits(args):
    """The disturbance limits of the command line (conditions.Limits)."""
    from duel.cell import conditions

    return conditions.Limits(args.max_steal_share, args.max_other_share, args.max_canary_score,
                             args.calibrate == "on", max(0, args.remeasures),
                             max(1, args.attempts))


def measure(args):
    """Measure the cell (or ``--points`` of it) in this process and write its rows."""
    from duel.cell import environment, models

    from duel.cell import conditions

    threads = args.threads or environment.usable_cpus()
    prepare_process(args.framework, args.device, threads)
    bound = conditions.bind_process(threads)  # before the framework starts its threads
    started_at = environment.utc_now()
    spec = models.load_model_spec(args.model_config)

    from duel.cell import journal, shard, sweep, timing
    from duel.cell.adapters import load_adapter

    adapters = OrderedDict(
        (mode, load_adapter(args.framework, mode)(mode, args.device, args.precision, threads,
                                                  args.task, tf32=args.tf32 == "on"))
        for mode in args.modes)
    if is_deployed(args.mode):
        adapters[args.mode].attach(args.artifact_dir, args.runner_build)
    columns = environment.host_columns(
        threads=threads,
        runner=args.runner,
        image=args.image,
        image_digest=args.image_digest,
        config_sha256=settings_digest(args, spec, args.modes[0]),
        seed=args.seed,
        started_at=started_at,
    )
    columns.update(bound)
    columns.update(adapters[args.modes[0]].environment())
    columns.update(environment.lock_columns(args.era, args.device, args.accept_drift,
                                            lock=args.lock_file))
    settings = sweep.SweepSettings(
        seed=args.seed,
        duel=timing.DuelSettings(
            args.warmup_calls, args.min_samples, args.min_time_s, args.max_samples, args.max_time_s,
            args.warmup_time_s, args.noise_ratio,
        ),
        timeit=timing.TimeitSettings(args.repeat, args.number),
        reference_dir=args.reference_dir,
        learning_rate=args.learning_rate,
        new_tokens=args.new_tokens,
    )
    cell = sweep.CellSpec(
        args.era, args.device, args.framework, args.mode, args.precision, args.task, spec.name,
        args.replicate,
    )
    points = sweep.plan_points(args.batch_sizes, args.sequence_lengths, args.methods,
                               args.modes)
    if args.points:
        points = [point for point in points
                  if tuple(point) in args.points or tuple(point[:3]) + (None,) in args.points]
    columns["attempt"] = args.attempt
    progress = None
    if progress_fds(args):
        progress = os.fdopen(args.progress_fd, "w", 1)
    # each mode's settings, as it has them alone
    mode_columns = dict((mode, {"config_sha256": settings_digest(args, spec, mode)})
                        for mode in args.modes)
    record = journal.Journal(journal.path_of(args.output), points, dict(columns, **cell._asdict()),
                             point_limit(args, spec, threads, settings), mode_columns)
    rows = sweep.run_sweep(adapters, spec, cell, points, settings, columns, started=STARTED,
                           progress=progress, judge=conditions.Judge(job_limits(args)),
                           journal=record, mode_columns=mode_columns)
    shard.write_shard(rows, args.output)
    record.close()
    return 0


def point_limit(args, spec, threads, settings):
    """A point's time limit (s): --point-time-limit times its estimate; None without one."""
    from duel.cell import estimate, flops

    if not args.point_time_limit:
        return None

    def limit_of(point):
        call_s = estimate.call_seconds(
            flops.point_flops(spec, args.task, point.batch_size, point.seq_len), threads)
        return args.point_time_limit * estimate.point_seconds(
            call_s, point.method, settings.duel._asdict(), settings.timeit._asdict())
    return limit_of


if __name__ == "__main__":
    status = main()
    if "--attempt" in sys.argv:  # a measuring process: its shard is on disk, synced
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)  # without the frameworks' teardown (about 0.6 s per process)
    sys.exit(status)
