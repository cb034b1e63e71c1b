"""Writing a user's file so that it is never left damaged: whole new content or the old, nothing between.

`snapshot(path)` reads a file and remembers what it was (content and stat); `replace(snap, data)` puts
`data` in its place only if the file is still exactly what was read. The new content goes to a temporary
file in the same directory (same filesystem, so the rename is atomic), is fsynced, gets the original's
mode and owner, and is renamed over the target with `os.replace`; the directory is fsynced after it. A
full disk, a file-size limit or a kill before the rename leaves the original byte-identical.

Symlinks: the file a link points to is replaced (the link stays a link). Hard links: a rename would cut
the other names off the new content, so a file with several names is rewritten in place, as editors do
with `backupcopy=yes`: space for the whole new content is reserved first (so a full disk fails before a
byte changes), a complete copy of the original is kept beside it until the new content is fsynced, and
it is restored from that copy on any error.

Nothing here knows about the CLI or the language server: errors are `WriteError`, whose message says
the original is unchanged.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from dataclasses import dataclass

__all__ = ["Snapshot", "WriteError", "replace", "snapshot", "write_new"]


class WriteError(OSError):
    """The new content could not be written; the file on disk is the one that was there before."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A file as it was read: the resolved path, its bytes, and the stat fields that change on a write."""

    path: str  # symlinks resolved
    data: bytes
    identity: tuple[int, ...]  # (device, inode, size, mtime_ns, ctime_ns)
    mode: int
    uid: int
    gid: int
    links: int


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def snapshot(path: str) -> Snapshot:
    """Read `path` (following symlinks) and what it is now; raises OSError as `open` does."""
    target = os.path.realpath(path)
    with open(target, "rb") as handle:
        info = os.fstat(handle.fileno())
        data = handle.read()
    return Snapshot(target, data, _identity(info), stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid,
                    info.st_nlink)


def _unchanged(snap: Snapshot, shown: str) -> None:
    """Raise unless the file still is what `snap` read: another program's edit is never overwritten."""
    try:
        info = os.stat(snap.path)
        with open(snap.path, "rb") as handle:
            data = handle.read(len(snap.data) + 1)
    except OSError as error:
        raise WriteError(error.errno, f"{shown}: cannot read it again before writing ({error.strerror}); "
                                      "left unchanged") from None
    if _identity(info) != snap.identity or data != snap.data:
        raise WriteError(errno.EBUSY, f"{shown}: changed by another program since it was read; left "
                                      "unchanged (run again)")


def _failed(error: OSError, shown: str) -> WriteError:
    reason = error.strerror or str(error)
    return WriteError(error.errno or errno.EIO, f"{shown}: cannot write ({reason}); the file is unchanged")


def _fsync_directory(directory: str) -> None:
    # The rename is durable only once the directory entry is on disk; some filesystems refuse an fsync
    # on a directory, which changes nothing about the file itself.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def replace(snap: Snapshot, data: bytes, shown: str = "") -> None:
    """Make the file of `snap` hold `data`, or raise WriteError and leave it as it was.

    `shown`: the name the messages use (the path as the user gave it)."""
    shown = shown or snap.path
    _unchanged(snap, shown)
    if snap.links > 1:
        _rewrite_in_place(snap, data, shown)
        return
    directory = os.path.dirname(snap.path) or "."
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(snap.path)}.", suffix=".rootrank-tmp",
                                         dir=directory)
    except OSError as error:
        raise _failed(error, shown) from None
    try:
        try:
            _write_all(fd, data)
            _keep_mode_and_owner(fd, temporary, snap)
            os.fsync(fd)
        finally:
            os.close(fd)
        _unchanged(snap, shown)  # right before the rename: an edit saved while we wrote wins
        os.replace(temporary, snap.path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError) and not isinstance(error, WriteError):
            raise _failed(error, shown) from None
        raise
    _fsync_directory(directory)


def _keep_mode_and_owner(fd: int, temporary: str, snap: Snapshot) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, snap.mode)
    else:  # Windows before 3.13
        os.chmod(temporary, snap.mode)
    if hasattr(os, "fchown") and (snap.uid, snap.gid) != (os.getuid(), os.getgid()):
        # Only root (or a member of the group) may give the file back its owner; otherwise the user
        # who runs the fix owns the new file, as with any editor's save.
        with contextlib.suppress(PermissionError):
            os.fchown(fd, snap.uid, snap.gid)


def _rewrite_in_place(snap: Snapshot, data: bytes, shown: str) -> None:
    """A file with hard links: new content through the same inode, with a full copy of the old beside it."""
    directory = os.path.dirname(snap.path) or "."
    try:
        backup_fd, backup = tempfile.mkstemp(prefix=f".{os.path.basename(snap.path)}.", suffix=".rootrank-orig",
                                             dir=directory)
    except OSError as error:
        raise _failed(error, shown) from None
    try:
        try:
            _write_all(backup_fd, snap.data)
            os.fsync(backup_fd)
        finally:
            os.close(backup_fd)
        fd = os.open(snap.path, os.O_WRONLY)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(backup)
        if isinstance(error, OSError):
            raise _failed(error, shown) from None
        raise
    restored = True
    try:
        try:
            _unchanged(snap, shown)
            if len(data) > len(snap.data) and hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, len(data))  # ENOSPC / EFBIG now, before a byte is changed
            os.lseek(fd, 0, os.SEEK_SET)
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except OSError as error:
            restored = False
            _restore(fd, snap.data)
            restored = True
            if isinstance(error, WriteError):
                raise
            raise _failed(error, shown) from None
    finally:
        os.close(fd)
        if restored:  # else the copy beside the file is the only whole original left: it stays
            with contextlib.suppress(OSError):
                os.unlink(backup)


def _restore(fd: int, original: bytes) -> None:
    # Writing the old bytes back needs no more space than they had (fallocate grew the file at most).
    os.lseek(fd, 0, os.SEEK_SET)
    _write_all(fd, original)
    os.ftruncate(fd, len(original))
    os.fsync(fd)


def write_new(path: str, data: bytes) -> None:
    """Write an output file (a report) whole or not at all: a temporary file renamed over `path`.

    Unlike `replace`, the old content (if any) is not compared: the user asked for it to be overwritten."""
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or "."
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".rootrank-tmp",
                                         dir=directory)
    except OSError as error:
        raise WriteError(error.errno or errno.EIO, f"{path}: cannot write ({error.strerror or error})") from None
    try:
        try:
            _write_all(fd, data)
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                umask = os.umask(0o022)
                os.umask(umask)
                mode = 0o666 & ~umask  # a new file gets the mode `open` would have given it
            os.chmod(temporary, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError) and not isinstance(error, WriteError):
            raise WriteError(error.errno or errno.EIO,
                             f"{path}: cannot write ({error.strerror or error}); nothing written") from None
        raise
    _fsync_directory(directory)
