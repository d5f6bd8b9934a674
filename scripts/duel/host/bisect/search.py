"""The search: measure the two ends, then halves, and name where a clear step happened.

Releases are in time order; ``measure(i)`` gives release i's per-process figures (a run's
processes, as every verdict uses them) or raises Skip. Between two measured releases the change
is the ratio of their geometric means (later over earlier: below 1 is faster), with Welch's t
interval over the processes on each side, and it is clear as every Duel comparison is: its whole
interval beyond ``min_effect`` (statistics.is_clear).

Only a clear change is searched: its range is halved at the release nearest its middle, and each
half whose change is clear is searched in turn, so several steps are all followed, down to
adjacent releases (a step). A range whose change is clear while neither half's is (the change is
spread over its releases, or its middle release is too noisy to place it) is reported as an
unresolved range, never as a step. A release that cannot be installed or measured is skipped
with its reason, as ``git bisect skip`` does, and the search tries its nearest neighbour.
"""
import collections

import numpy as np

from duel.host.verdicts import statistics

Change = collections.namedtuple("Change", "before after ratio low high clear")
Finding = collections.namedtuple("Finding", "kind change reason")  # kind: step or unresolved
Answer = collections.namedtuple("Answer", "total findings measured skipped")


class Skip(Exception):
    """A release that cannot be measured (it will not install or import, or its points failed);
    the message says why."""


def figure(figures):
    """A release's figure: the geometric mean of its processes' figures."""
    return float(np.exp(np.mean(np.log(np.asarray(figures, dtype=np.float64)))))


def change(before, after, figures, min_effect):
    """The Change from release ``before`` to ``after`` (indices into ``figures``)."""
    ratio = figure(figures[after]) / figure(figures[before])
    interval = statistics.welch_ratio(figures[after], figures[before], ratio)
    low, high = interval if interval else (float("nan"), float("nan"))
    clear = bool(interval) and statistics.is_clear(low, high, ratio, min_effect)
    return Change(before, after, ratio, low, high, clear)


def search(count, measure, min_effect=statistics.MIN_EFFECT):
    """The Answer over ``count`` releases: the change between the ends, the findings (steps and
    unresolved ranges, in time order), {index: figures} of every release measured and {index:
    reason} of every one skipped. Skip from an end ends the search (there is nothing to hold
    the other end against): it is raised on."""
    figures, skipped = collections.OrderedDict(), collections.OrderedDict()

    def measured(index):
        if index not in figures and index not in skipped:
            try:
                figures[index] = list(measure(index))
            except Skip as reason:
                skipped[index] = str(reason)
        return index in figures

    for end in (0, count - 1):
        if not measured(end):
            raise Skip("release %d of the range (an end) cannot be measured: %s"
                       % (end, skipped[end]))

    def middle(before, after):
        """The release nearest the middle of (before, after) that can be measured, or None."""
        centre = (before + after) / 2.0
        for index in sorted(range(before + 1, after), key=lambda i: (abs(i - centre), i)):
            if measured(index):
                return index
        return None

    def within(before, after):
        found = change(before, after, figures, min_effect)
        if not found.clear:
            return []
        if after - before == 1:
            return [Finding("step", found, None)]
        split = middle(before, after)
        if split is None:
            return [Finding("unresolved", found, "no release between could be measured")]
        inner = within(before, split) + within(split, after)
        if not inner:
            return [Finding("unresolved", found, "neither half's change is clear: it is spread "
                                                 "over these releases, or too noisy to place")]
        return inner

    total = change(0, count - 1, figures, min_effect)
    findings = within(0, count - 1)
    return Answer(total, findings, dict(figures), dict(skipped))
