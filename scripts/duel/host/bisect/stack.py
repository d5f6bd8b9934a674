"""A release's era: the framework at that release, the rest of the stack held where wheels allow.

The lower end fixes what is held: the other framework's release (it is not measured, but the
reference weights are made with it), transformers' and the Python. Each release between is
resolved as the index stood on its day (as_of) with those pins, on the held Python where the
release has wheels for it, keeping the rest of the lower end's lock wherever it fits (numpy
aside: it moves with the frameworks' builds). Where that cannot be resolved (no wheels of a held
release for the Python the framework needs), the other framework moves to its nearest release
with such wheels, then transformers is let go, then the other framework, each as of that day,
and the release's row says what moved. Its lock and registry entry go to the bisection's folder
($DUEL_MORE_ERAS names that registry), never to envs/eras.yaml.
"""
import collections
import os
import re
import shutil
import time

from packaging.version import Version

from duel.cell import frameworks, locks
from duel.host.stacks import as_of, eras, releases

# Not kept from the lower end: numpy moves with the frameworks' builds (their C ABI), as the
# release of its day needs it.
FLOATING = ("numpy",)
REGISTRY = "eras.yaml"
LOCKS = "locks"
USED = "duel-last-used"  # touched in an environment each time a bisection measures with it
Stack = collections.namedtuple("Stack", "era version date python lock released")


def package(framework):
    return frameworks.package(framework)


def other(framework):
    """The package of the framework a bisection holds while it moves ``framework``. Two-sided:
    a bisection moves one framework of the pair the verdict shows (the registry's first two,
    pairs.SHOWN) and holds the other."""
    return [frameworks.package(name) for name in frameworks.NAMES[:2] if name != framework][0]


def era_name(framework, version):
    return "%s-%s" % (package(framework), version)


def made_eras(envs_dir):
    """The eras under ``envs_dir`` that bisections made (named by era_name): those whose
    environments may be removed when the disk runs short."""
    pattern = re.compile(r"^(%s)-\d" % "|".join(map(frameworks.package, frameworks.NAMES)))
    return sorted(name for name in (os.listdir(envs_dir) if os.path.isdir(envs_dir) else ())
                  if pattern.match(name))


def pins_of(lock):
    """{canonical name: version} of a lock file."""
    with open(lock) as handle:
        return as_of.versions(handle.read())


def held_of(framework, lock, date):
    """What a bisection holds from its lower end's lock (of ``date``): {'other': pin,
    'transformers': pin, 'python': X.Y, 'date': date}; a release is resolved as of its own day
    or this date, whichever is later, so that the held pins were out."""
    pins = pins_of(lock)
    held = {"python": eras.required_python(lock), "date": date,
            "prefer": preferences(lock, [package(framework)] + list(FLOATING))}
    for key, name in (("other", other(framework)), ("transformers", "transformers")):
        if name in pins:
            held[key] = "%s==%s" % (name, pins[name])
    return held


def preferences(lock, leave):
    """A lock's pins with their hashes, those of the packages ``leave`` left out: what the
    resolver keeps of the lower end's stack wherever it fits (protobuf for TensorFlow 2.0, say,
    whose own requirement has no upper bound though protobuf 4 breaks it)."""
    with open(lock) as handle:
        lines = handle.read().splitlines()
    kept, keep = [], False
    for line in lines:
        if line and not line[0].isspace():  # a pin starts a block; its hashes follow, indented
            match = locks.PIN.match(line)
            keep = bool(match) and locks.canonical(match.group(1)) not in [
                locks.canonical(name) for name in leave]
        if keep:
            kept.append(line)
    return "\n".join(kept) + "\n" if kept else ""


def nearest(held_pin, others, python, date):
    """The other framework's pin nearest its held one that has a wheel for ``python`` and was
    out on ``date`` (the oldest such release not older than the held one), or None."""
    name, _, version = held_pin.partition("==")
    later = [one for one in others if python in one.pythons and one.date <= date
             and releases.Version(one.version) >= releases.Version(version)]
    return "%s==%s" % (name, later[0].version) if later else None


def candidates(framework, release, held, python, others, date):
    """(pins, what is not held: 'other', 'transformers') to try for ``release`` on ``python``,
    least change first: all held; the other framework at its nearest release with wheels for
    that Python, with transformers held and then not; then the other framework as of the day,
    with transformers held and then not."""
    own = "%s==%s" % (package(framework), release.version)
    other_pin, transformers = held.get("other"), held.get("transformers")
    moved = nearest(other_pin, others, python, date) if other_pin else None
    options = [(other_pin, transformers, ())]
    if moved and moved != other_pin:
        options += [(moved, transformers, ("other",)), (moved, None, ("other", "transformers"))]
    options += [(None, transformers, ("other",)), (None, None, ("other", "transformers"))]
    tried = []
    for other_now, transformers_now, released in options:
        pins = [own] + [pin for pin in (other_now, transformers_now) if pin]
        if pins not in tried:
            tried.append(pins)
            yield pins, released


def resolve(framework, release, held, resolver, others=()):
    """(python, requirement lines, lock text, released): ``release`` (a releases.Release) as of
    its day (or the held stack's, if later) with ``held`` pinned where wheels allow, on the held
    Python first; on that Python, the rest of the lower end's lock is kept wherever it fits (on
    another, its wheels would not fit). ``others`` lists the other framework's releases
    (releases.releases), for its nearest release with wheels. ``resolver(date, lines, pythons,
    prefer)`` is as_of.resolve with its uv and options bound."""
    pythons = [held["python"]] + [one for one in as_of.PYTHONS if one != held["python"]]
    pythons = [one for one in pythons if one in release.pythons] or list(release.pythons)
    date = max(release.date, held.get("date", ""))
    reasons = []
    for python in pythons:
        kept = held.get("prefer", "") if python == held["python"] else ""
        for pins, released in candidates(framework, release, held, python, others, date):
            lines = as_of.requirements(pins)
            for prefer in [kept, ""][:2 if kept else 1]:  # with the rest kept, then without
                try:
                    found, text = resolver(date, lines, [python], prefer)
                except as_of.AsOfError as error:
                    reasons.append(str(error))
                    continue
                return found, lines, text, released
    raise as_of.AsOfError("; ".join(reasons))


RELEASED = "let go of (as of its day, not held): "


def make_era(folder, checkout, framework, release, held, resolver, others=()):
    """The release's Stack: its lock and entry in ``folder``'s registry, made once (a release
    already there is read back)."""
    era = era_name(framework, release.version)
    lock = os.path.join(folder, LOCKS, era + ".txt")
    if era not in eras.registry(checkout):
        python, lines, resolved, released = resolve(framework, release, held, resolver, others)
        text = as_of.lock_text(era, release.date, python, lines, resolved,
                               made_by="duel bisect",
                               notes=[RELEASED + (", ".join(released) or "nothing")])
        as_of.write_era(checkout, era, release.date, python, text,
                        registry=os.path.join(folder, REGISTRY), locks_dir=os.path.dirname(lock))
    eras.write_conda_twin(checkout, lock)  # the rules name every era's, --sdm conda or not
    return Stack(era, release.version, release.date, eras.required_python(lock), lock,
                 released_of(lock))


def released_of(lock):
    """What a release's lock did not hold ('other', 'transformers'), from its header."""
    with open(lock) as handle:
        for line in handle:
            if line.startswith("# " + RELEASED):
                words = line[len("# " + RELEASED):].strip()
                return () if words == "nothing" else tuple(words.split(", "))
    return ()


def end_release(framework, end, listed, checkout):
    """A range's end: an era of envs/eras.yaml (its lock's release, its own stack: returned as
    a Stack), a date (the newest release out by then) or a version (a minor means its newest
    patch): a releases.Release, or a Stack."""
    known = eras.registry(checkout)
    if end in known:
        lock = eras.lock_file(checkout, end, "cpu")
        pins = pins_of(lock)
        if package(framework) not in pins:
            raise as_of.AsOfError("era %s has no %s" % (end, package(framework)))
        return Stack(end, pins[package(framework)], known[end].date, eras.required_python(lock),
                     lock, ())
    if as_of.DATE.match(end):
        out = [one for one in listed if one.date <= as_of.check_date(end)]
        if not out:
            raise as_of.AsOfError("no %s release with wheels here was out on %s"
                                  % (package(framework), end))
        return out[-1]
    exact = [one for one in listed if one.version == end]
    if exact and len(Version(end).release) > 2:
        return exact[0]
    same = [one for one in listed if releases.minor(one.version) == releases.minor(end)]
    if not same or len(Version(end).release) > 2:
        raise as_of.AsOfError("%s %s has no release with wheels for Python %s here" % (
            package(framework), end, ", ".join(as_of.PYTHONS)))
    return same[-1]


def between(listed, low, high):
    """The releases a bisection steps through strictly between its ends (a minor each, its
    newest patch), oldest first."""
    inner = releases.minors(listed, low, high)
    return [one for one in inner if Version(low) < Version(one.version) < Version(high)
            and releases.minor(one.version) not in (releases.minor(low), releases.minor(high))]


def size_bytes(prefix):
    total = 0
    for root, _, names in os.walk(prefix):
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                total += os.path.getsize(path)
    return total


def touch(prefix):
    with open(os.path.join(prefix, USED), "w") as handle:
        handle.write(time.strftime("%Y-%m-%dT%H:%M:%S"))


def make_room(envs_dir, need_bytes, keep, eras_made, log):
    """Remove the least recently used environments of bisection eras (``eras_made``: their
    names; never another era's, never ``keep``) until ``need_bytes`` are free on the disk."""
    found = []
    for era in eras_made:
        for prefix in sorted(os.path.join(envs_dir, era, "cpu", key)
                             for key in (os.listdir(os.path.join(envs_dir, era, "cpu"))
                                         if os.path.isdir(os.path.join(envs_dir, era, "cpu"))
                                         else ())):
            if os.path.isdir(prefix) and os.path.abspath(prefix) != os.path.abspath(keep):
                used = os.path.join(prefix, USED)
                found.append((os.path.getmtime(used) if os.path.exists(used) else 0, prefix))
    for _, prefix in sorted(found):
        if shutil.disk_usage(envs_dir).free >= need_bytes:
            return
        log("disk short: removing the least recently used environment %s" % prefix)
        shutil.rmtree(prefix)
