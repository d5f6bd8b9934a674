"""A package's releases and the day each came out, as the package index lists them.

The index is the one pip installs from here (its ``index-url`` setting, else pip's own default),
read through its JSON simple API (PEP 691), whose files carry their upload times (PEP 700). A
release counts once it has a Linux x86-64 wheel for a Python at hand (as_of.PYTHONS); its day is
its first such wheel's. ``minors`` keeps one release per minor version, its newest patch, as a
bisection steps through them.
"""
import collections
import json
import urllib.request

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from duel.host.stacks import as_of, pip_sources

ACCEPT = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 60
Release = collections.namedtuple("Release", "version date pythons")


class ReleaseError(RuntimeError):
    """The index could not be read, or lists nothing usable; the message says which."""


def index_url(settings=None):
    """The simple index pip installs from: its ``index-url`` setting, else pip's default."""
    settings = pip_sources.pip_settings() if settings is None else settings
    if settings.get("index-url"):
        return settings["index-url"].rstrip("/")
    from pip._internal.models.index import PyPI  # pip's own default, named nowhere else

    return PyPI.simple_url.rstrip("/")


def project_page(package, index=None):
    """The index's JSON page of ``package`` (PEP 691)."""
    url = "%s/%s/" % (index or index_url(), canonicalize_name(package))
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return json.load(answer)
    except (OSError, ValueError) as error:
        raise ReleaseError("the package index has no readable page for %s (%s)"
                           % (package, error))


def _python(tag):
    """'3.7' of a wheel's interpreter tag 'cp37', or None."""
    if not tag.interpreter.startswith("cp") or len(tag.interpreter) < 4:
        return None
    digits = tag.interpreter[2:]
    return "%s.%s" % (digits[0], digits[1:])


def wheels(page, pythons=as_of.PYTHONS):
    """(version, the Pythons of ``pythons`` it serves, the file's entry) of every Linux x86-64
    wheel of a final release on ``page``, yanked ones and those without an upload time left out."""
    for entry in page.get("files", ()):
        if entry.get("yanked") or not entry.get("upload-time"):
            continue
        try:
            _, version, _, tags = parse_wheel_filename(entry["filename"])
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if version.is_prerelease or version.is_devrelease or version.local:
            continue
        usable = set(_python(tag) for tag in tags
                     if "linux" in tag.platform and tag.platform.endswith("x86_64")) & set(pythons)
        if usable:
            yield version, usable, entry


def releases(page, pythons=as_of.PYTHONS):
    """Final releases with a Linux x86-64 wheel for one of ``pythons``, oldest first: each
    with its day (YYYY-MM-DD of its first such wheel) and the Pythons it has wheels for."""
    found = {}
    for version, usable, entry in wheels(page, pythons):
        day, known = found.get(version, (entry["upload-time"][:10], set()))
        found[version] = (min(day, entry["upload-time"][:10]), known | usable)
    return [Release(str(version), day, tuple(sorted(known, key=Version)))
            for version, (day, known) in sorted(found.items())]


def wheel_bytes(page, version, python):
    """The download of a release's largest Linux x86-64 wheel for ``python``, or None."""
    sizes = [entry.get("size") or 0 for found, usable, entry in wheels(page, (python,))
             if str(found) == version]
    return max(sizes) if sizes else None


def minor(version):
    """'2.5' of '2.5.3'."""
    return ".".join(str(part) for part in Version(version).release[:2])


def minors(listed, low=None, high=None):
    """One release per minor version (its newest patch, and that patch's day), oldest first;
    only minors from ``low``'s to ``high``'s where given (a version, or its minor)."""
    newest = collections.OrderedDict()
    for release in listed:
        newest[minor(release.version)] = release
    keep = []
    for name, release in newest.items():
        if low and Version(name) < Version(minor(low)):
            continue
        if high and Version(name) > Version(minor(high)):
            continue
        keep.append(release)
    return keep
