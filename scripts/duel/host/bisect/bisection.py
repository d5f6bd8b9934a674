"""One bisection from end to end: the releases listed, each one needed made, built, measured.

Everything a bisection makes lives in its folder: the releases' locks and registry (eras.yaml),
a run folder per release measured (runs/<era>/), and the answer (answer.py). The environments
are the workflow's own (config era_envs_dir), built once per lock and reused by any later run or
bisection; when the disk runs short, the least recently used of a bisection's are removed.
"""
import functools
import math
import os
import time

from duel.cell import environment
from duel.host.bisect import answer, measure, search, stack
from duel.host.stacks import as_of, eras, pip_sources, releases
from duel.host.verdicts import statistics

ENVS_DIR = ".era-envs"  # config era_envs_dir's default, under the checkout
ROOM_BYTES = 12 * 1024 ** 3  # free disk kept before an environment is built (the largest: 6.1 GB)


def prepare(folder):
    """The folder, and its registry named in $DUEL_MORE_ERAS for this process and its runs."""
    os.makedirs(folder, exist_ok=True)
    registry = os.path.join(os.path.abspath(folder), stack.REGISTRY)
    if not os.path.exists(registry):
        with open(registry, "w") as handle:
            handle.write("eras:\n")
    os.environ[eras.MORE_ERAS_ENV] = registry
    return registry


def resolver(uv):
    options, environment = pip_sources.uv_options(pip_sources.pip_settings())
    return functools.partial(as_of.resolve, uv, dict(os.environ, **environment), options)


def plan(framework, start, end, checkout):
    """(the releases in order, each a Release or an era's Stack; the framework's index page)."""
    page = releases.project_page(stack.package(framework))
    listed = releases.releases(page)
    low = stack.end_release(framework, start, listed, checkout)
    high = stack.end_release(framework, end, listed, checkout)
    if releases.Version(low.version) >= releases.Version(high.version):
        raise as_of.AsOfError("the range %s (%s) to %s (%s) is empty: the first end must be "
                              "the older release" % (start, low.version, end, high.version))
    return [low] + stack.between(listed, low.version, high.version) + [high], page


def most_measured(count):
    """Releases a bisection of ``count`` measures for one step: the ends, then one per halving."""
    return min(count, 2 + int(math.ceil(math.log(max(count - 1, 1), 2))))


def dry_run(framework, sequence, page, checkout, say):
    """The releases, the most a one-step search measures, and each one's cost, before anything
    is built (``page``: the framework's index page, as plan read it)."""
    say("%d releases of %s from %s to %s; a search for one step measures at most %d of them "
        "(the ends, then one per halving), more for each further step" % (
            len(sequence), stack.package(framework), sequence[0].version, sequence[-1].version,
            most_measured(len(sequence))))
    held = getattr(sequence[0], "python", None)
    for one in sequence:
        python = getattr(one, "python", None) or (
            held if held in one.pythons else one.pythons[-1])
        size = releases.wheel_bytes(page, one.version, python)
        built = isinstance(one, stack.Stack) and eras.stale_reason(eras.keyed_prefix(
            os.path.join(checkout, ENVS_DIR), one.era, "cpu", one.lock), one.lock) is None
        say("  %-10s %s  Python %s  %s" % (
            one.version, one.date, python, "environment built already" if built else
            "to build: its %s wheel alone is %.2f GB to fetch" % (stack.package(framework),
                                                                  size / 1e9)
            if size else "to build (no wheel size listed)"))


REMEASURED = "remeasured-since"  # in a bisection's folder: when its --remeasure began


def remeasured_since(folder):
    """When this folder's remeasuring began (ISO time), now where it has not: runs stored
    before it do not count, so an interrupted --remeasure resumes with the runs it made."""
    path = os.path.join(folder, REMEASURED)
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        with open(path, "w") as handle:
            handle.write(environment.utc_now() + "\n")
    with open(path) as handle:
        return handle.read().strip()


def release_record(one, index):
    return {"index": index, "version": one.version, "date": one.date,
            "era": getattr(one, "era", None), "status": "not measured", "reason": None}


def run(point, start, end, folder, store, checkout, uv, name, min_effect=statistics.MIN_EFFECT,
        remeasure=False, say=print):
    """Bisect ``point`` between ``start`` and ``end``; the answer's record (also written). With
    ``remeasure``, no run stored before the folder's first remeasuring began counts: every
    release is measured again in fresh processes (the environments are reused)."""
    began = time.time()
    since = remeasured_since(folder) if remeasure else ""
    prepare(folder)
    sequence, _ = plan(point.framework, start, end, checkout)
    resolve = resolver(uv)
    others = releases.releases(releases.project_page(stack.other(point.framework)))
    held = (stack.held_of(point.framework, sequence[0].lock, sequence[0].date)
            if isinstance(sequence[0], stack.Stack) else {"python": as_of.PYTHONS[0]})
    records = [release_record(one, index) for index, one in enumerate(sequence)]
    built = []
    envs_dir = os.path.join(checkout, ENVS_DIR)
    here = measure.machine()
    seen = {"cpu_model": None, "method": None}  # as the measured rows say

    def measured(index):
        nonlocal held
        one = sequence[index]
        record = records[index]
        if not isinstance(one, stack.Stack):
            try:
                one = stack.make_era(folder, checkout, point.framework, one, held, resolve,
                                     others)
            except as_of.AsOfError as error:
                record.update(status="skipped", reason="it will not resolve: %s" % error)
                raise search.Skip(record["reason"])
            sequence[index] = one
        if index == 0 and "other" not in held:  # a lower end given by version or date
            held = stack.held_of(point.framework, one.lock, one.date)
        pins = stack.pins_of(one.lock)
        record.update(era=one.era, python=one.python, lock=one.lock,
                      lock_sha256=eras.lock_sha256(one.lock), released=", ".join(one.released),
                      transformers=pins.get("transformers"), numpy=pins.get("numpy"),
                      other="%s %s" % (stack.other(point.framework),
                                       pins.get(stack.other(point.framework))))
        found = measure.stored(store, point, one.era, one.lock, here, since)
        if found is None:
            prefix = eras.keyed_prefix(envs_dir, one.era, "cpu", one.lock)
            fresh = (not eras.in_workflow_env(one.era, "cpu", one.lock)
                     and eras.stale_reason(prefix, one.lock) is not None)
            if fresh:
                stack.make_room(envs_dir, ROOM_BYTES, prefix, stack.made_eras(envs_dir), say)
            say("measuring %s %s (%s)%s" % (stack.package(point.framework), one.version,
                                             one.era, ", building its environment" if fresh
                                             else ""))
            started = time.time()
            run_folder = os.path.join(folder, "runs", one.era + (
                "-since-" + since.replace(":", "")[:15] if since else ""))
            code = measure.run(checkout, run_folder, measure.config(point, one.era, store),
                               os.environ[eras.MORE_ERAS_ENV])
            record["run_s"] = round(time.time() - started, 1)
            if fresh and os.path.isdir(prefix):
                built.append(one.era)
                record["environment_gb"] = round(stack.size_bytes(prefix) / 1e9, 2)
            if os.path.isdir(prefix):
                stack.touch(prefix)
            found = measure.stored(store, point, one.era, one.lock, here, since)
            if found is None:
                record.update(status="skipped", reason="its run stored no row (exit status %d: %s)"
                              % (code, measure.last_lines(run_folder)))
                raise search.Skip(record["reason"])
        record["run_id"], rows = found
        try:
            figures = measure.figures(rows)
        except search.Skip as error:
            record.update(status="skipped", reason=str(error))
            raise
        for column in seen:
            known = rows[column].dropna()
            seen[column] = seen[column] or (str(known.iloc[0]) if len(known) else None)
        interval = statistics.figure_interval(figures) or (None, None)
        record.update(status="measured", figures_ms=figures, figure_ms=search.figure(figures),
                      low_ms=interval[0], high_ms=interval[1], processes=len(figures),
                      build=measure.builds(rows))
        say("  %s %s: %.4g ms [%s] over %d processes" % (
            stack.package(point.framework), one.version, record["figure_ms"], ", ".join(
                "%.4g" % value for value in figures), len(figures)))
        return figures

    found = search.search(len(sequence), measured, min_effect)
    findings = []
    for finding in found.findings:
        before, after = records[finding.change.before], records[finding.change.after]
        findings.append({"kind": finding.kind, "before": finding.change.before,
                         "after": finding.change.after, "ratio": finding.change.ratio,
                         "low": finding.change.low, "high": finding.change.high,
                         "reason": finding.reason, "coincides": answer.coincides(before, after),
                         "confounded": answer.confounded(before, after)})
    total = found.total
    record = {
        "name": name, "model": point.model, "framework": point.framework, "mode": point.mode,
        "batch_size": point.batch_size, "seq_len": point.seq_len, "method": seen["method"],
        "machine": here, "cpu_model": seen["cpu_model"], "from": start, "to": end,
        "min_effect": min_effect, "remeasured": bool(remeasure),
        "total": {"ratio": total.ratio, "low": answer.finite(total.low),
                  "high": answer.finite(total.high), "clear": total.clear},
        "findings": findings, "releases": records, "environments_built": len(built),
        "seconds": round(time.time() - began, 1),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    answer.write(record, folder, store)
    return record
