"""One comparison of two runs from start to end: compare, write the files, print the summary.

The command (``duel compare``) and the workflow's compare_baseline rule
(scripts/compare_baseline.py) both call ``compare_and_write``.
"""
from duel.host.compare import changes, report
from duel.host.verdicts import statistics


def compare_and_write(base, new, output, ignore=(), min_effect=statistics.MIN_EFFECT,
                      threshold=None, fail_on_new_failures=False, resamples=statistics.RESAMPLES,
                      machine_band=True):
    """Compare, write the outputs, print the summary's first lines; the exit status. ``base``
    and ``new``: run folders, summary files, or runs already read (changes.Run)."""
    report.check_output(output)
    base, new = (run if isinstance(run, changes.Run) else changes.read_run(run)
                 for run in (base, new))
    result = changes.compare(base, new, ignore, min_effect,
                             threshold, resamples=resamples,
                             fail_on_new_failures=fail_on_new_failures,
                             machine_band=machine_band)
    report.write_outputs(result, output)
    for line in result.warnings:
        print(line)
    counts = changes.verdict_counts(result.points)
    print(", ".join("%s %d" % (verdict, count) for verdict, count in counts.values if count))
    if not result.generation.empty:
        print("generation verdicts changed: %d of %d pairs of modes"
              % ((result.generation["change"] != "").sum(), len(result.generation)))
    print(report.ci_status_line(result))
    print("written to %s" % output)
    return result.exit_status
