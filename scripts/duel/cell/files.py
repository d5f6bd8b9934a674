"""Writing a file (or a folder's files) so that no reader ever sees half of it, and naming a
file by its content.

One home for both, used by cells (shards, reference and export manifests) and by the host (run
manifests, environment markers, runner build records, image digests, the wheel cache, a
comparison's files, the published site). Python 3.6-compatible.
"""
import contextlib
import hashlib
import json
import os


@contextlib.contextmanager
def atomic_path(path, sync=False):
    """Yield a temporary path beside ``path``; once the block has written it, it replaces ``path``
    in one rename (``sync``: flushed to disk first). On an error ``path`` is left as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        os.makedirs(folder)
    partial = "%s.partial-%d" % (path, os.getpid())
    try:
        yield partial
        if sync:
            with open(partial, "rb") as written:
                os.fsync(written.fileno())
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def move_into(staging, folder, names):
    """Each of ``names`` (paths relative to ``staging``) into ``folder`` in one rename, its
    subfolders made: a folder's files replaced from one written beside it, each seen old or new
    by a reader, never half (``staging`` on the same file system as ``folder``)."""
    for name in names:
        target = os.path.join(folder, name)
        if not os.path.isdir(os.path.dirname(target)):
            os.makedirs(os.path.dirname(target))
        os.replace(os.path.join(staging, name), target)


def write_json(path, data, sort_keys=False):
    """``data`` as indented JSON at ``path``, atomically (readers see the old file or the new)."""
    with atomic_path(path) as partial:
        with open(partial, "w") as handle:
            json.dump(data, handle, indent=2, sort_keys=sort_keys)
            handle.write("\n")


def file_sha256(path, chunk=1 << 22):
    """Hex SHA-256 of a file's bytes, read in chunks (an image file can be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def describe_files(folder, parts):
    """{path in ``folder``: {size, mtime_ns, ctime_ns, inode, sha256}} of every file under each
    of ``parts`` (files or folders in ``folder``): what a manifest records so that planning can
    tell a file truncated or changed after its job wrote it, even with its modification time
    set back (the change time cannot be; duel/host/plan/references.py)."""
    described = {}
    for part in parts:
        top = os.path.join(folder, part)
        paths = [top] if os.path.isfile(top) else [
            os.path.join(root, name) for root, _, names in os.walk(top) for name in names]
        for path in sorted(paths):
            status = os.stat(path)
            described[os.path.relpath(path, folder)] = {
                "size": status.st_size, "mtime_ns": status.st_mtime_ns,
                "ctime_ns": status.st_ctime_ns, "inode": status.st_ino,
                "sha256": file_sha256(path)}
    return described
