"""Input and output at the edge: safe writes of generated files.

A regular file is replaced atomically (a reader sees the old content or the new, never half),
keeping its mode and, where the operating system allows, its owner. A symlink is followed and
its target updated. A FIFO or a character device (``/dev/stdout``, ``/dev/full``) is written
through, never replaced by a regular file. Every failure is an :class:`OutputError` whose
message names the path and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path

from lmi_config.errors import OutputError as OutputError

STDOUT = "-"


def write_output(destination: str, text: str) -> str:
    """Write ``text`` to ``destination`` (``-`` is standard output); returns what was written to.

    Raises :class:`OutputError` for a missing or read-only directory, a directory, a FIFO with
    no reader or a full device.
    """
    if destination == STDOUT:
        _write_stdout(text)
        return "standard output"
    path = Path(destination)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        status = os.stat(target)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise OutputError(f"cannot write {destination}: {error.strerror or error}") from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OutputError(f"cannot write {destination}: it is a directory; give a file name")
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_through(target, text, destination, status.st_mode)
        return destination
    write_atomically(target, text, shown=destination)
    return destination


def _write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as error:
        raise OutputError(f"cannot write to standard output: {error.strerror or error}") from None


def _write_through(target: Path, text: str, shown: str, mode: int) -> None:
    """Write into a FIFO or a device in place: the node itself is never replaced."""
    if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise OutputError(
            f"cannot write {shown}: it is neither a regular file, a FIFO nor a character device"
        )
    flags = os.O_WRONLY | (os.O_NONBLOCK if stat.S_ISFIFO(mode) else 0)
    try:
        handle = os.open(target, flags)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise OutputError(f"cannot write {shown}: it is a FIFO and nothing is reading from it") from None
        raise OutputError(f"cannot write {shown}: {error.strerror or error}") from None
    try:
        if stat.S_ISFIFO(mode):
            os.set_blocking(handle, True)
        data = text.encode("utf-8")
        while data:
            written = os.write(handle, data)
            data = data[written:]
    except OSError as error:
        raise OutputError(f"cannot write {shown}: {error.strerror or error}") from None
    finally:
        os.close(handle)


def write_atomically(path: Path, text: str, *, shown: str | None = None) -> None:
    """Replace (or create) a regular file so that a reader sees the old content or the new.

    The file keeps its permission bits and, where allowed, its owner and group; a new file gets
    0644 less the umask. Raises :class:`OutputError` when the directory is missing or read-only.
    """
    import tempfile  # only when a file is written

    shown = shown or str(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except FileNotFoundError:
        raise OutputError(f"cannot write {shown}: the directory {directory} does not exist") from None
    except PermissionError:
        raise OutputError(
            f"cannot write {shown}: the directory {directory} is not writable (permission denied)"
        ) from None
    except OSError as error:
        raise OutputError(f"cannot write {shown}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        _copy_metadata(path, temporary)
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(f"cannot write {shown}: {error.strerror or error}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _copy_metadata(path: Path, temporary: str) -> None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o644 & ~umask)
        return
    os.chmod(temporary, stat.S_IMODE(status.st_mode))
    if hasattr(os, "chown"):
        # only root (or the owner, for the group) may keep another user's ownership
        with contextlib.suppress(PermissionError):
            os.chown(temporary, status.st_uid, status.st_gid)
