"""The folder duel publish writes a site to: only the files an earlier publish wrote are replaced.

The site is written into a hidden folder inside it, then each file takes its old one's place in
one rename, so a reader (a static host serving the folder) sees every page old or new, never
half; a MARKER file lists the site's files, and whatever else the folder holds (a CNAME, notes
of one's own) is left as it is.
"""
import os
import shutil

from duel.cell import files

from duel.host.store import archive

MARKER = ".duel-site"  # in a folder publish wrote: the files it wrote, the only ones it replaces
PARTIAL = ".duel-site-partial-"  # a site being written, inside the folder it goes to


def own_files(out):
    """The files an earlier publish wrote into ``out`` (its MARKER lists them); StoreError
    where ``out`` holds files publish did not write and no earlier site (naming one)."""
    if not os.path.exists(out):
        return []
    if not os.path.isdir(out):
        raise archive.StoreError("%s exists and is not a folder: give a folder for the site" % out)
    try:
        with open(os.path.join(out, MARKER)) as handle:
            return [line for line in handle.read().splitlines() if line]
    except FileNotFoundError:
        others = sorted(name for name in os.listdir(out) if not name.startswith(PARTIAL))
        if others:
            raise archive.StoreError(
                "%s holds files duel publish did not write (%s, ...): give a new or empty "
                "folder, or an earlier site's" % (out, os.path.join(out, others[0])))
        return []


def fresh_folder(out):
    """A new folder inside ``out`` to write the site into (refusing an ``out`` that holds
    files publish did not write and no earlier site)."""
    own_files(out)
    partial = os.path.join(out, "%s%d" % (PARTIAL, os.getpid()))
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    return partial


def replace(partial, out, written):
    """The new site's files in place of the old site's, each in one rename; the old site's
    files the new one does not have removed; whatever else ``out`` holds (a CNAME, notes of
    one's own) is left as it is. The MARKER lists the new site's files."""
    earlier = own_files(out)
    files.move_into(partial, out, written)
    for name in sorted(set(earlier) - set(written)):
        path = os.path.join(out, name)
        if os.path.isfile(path):
            os.remove(path)
        folder = os.path.dirname(path)
        while folder != os.path.normpath(out) and os.path.isdir(folder) and \
                not os.listdir(folder):
            os.rmdir(folder)
            folder = os.path.dirname(folder)
    shutil.rmtree(partial, ignore_errors=True)
    with files.atomic_path(os.path.join(out, MARKER)) as marker:
        with open(marker, "w") as handle:
            handle.write("".join(name + "\n" for name in written))
