"""Writes that cannot lie: every byte count checked, files and directories fsynced, a replacement
verified before it is renamed over the original, and a small high-water-mark file.

A write that fails raises OSError and never leaves a shorter file in place of a good one.
"""
from __future__ import annotations

import errno
import os
import zlib
from pathlib import Path
from typing import Optional

from .faults import crash_point


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (a short write is continued; no progress is an error)."""
    view = memoryview(data)
    done = 0
    while done < len(data):
        n = os.write(fd, view[done:])
        if n <= 0:
            raise OSError(errno.EIO, f"write made no progress after {done} of {len(data)} bytes")
        done += n


def fsync_dir(path: Path) -> None:
    """Make a rename or creation in `path`'s directory durable."""
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_verified(path: Path, data: bytes, fsync: bool = True) -> int:
    """Replace `path` by `data`: a temporary copy is written, fsynced and read back before it is
    renamed over `path`. Returns a descriptor that appends to the new file (opened before the
    rename, so no failure after it can leave the caller writing to the old one). On any failure
    `path` is untouched and the copy removed. The directory's fsync is the caller's."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    append_fd = -1
    try:
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
        size = os.fstat(fd).st_size
        if size != len(data) or os.pread(fd, len(data), 0) != data:
            raise OSError(errno.EIO, f"{tmp} reads back {size} bytes that differ from the "
                                     f"{len(data)} written")
        append_fd = os.open(tmp, os.O_WRONLY | os.O_APPEND)
        crash_point("compact-written")
        os.replace(tmp, path)
    except BaseException:
        if append_fd >= 0:
            os.close(append_fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)
    crash_point("compact-renamed")
    return append_fd


class Mark:
    """A durable counter (the journal's high-water mark): two checksummed 32-byte slots written in
    turn with pwrite and fdatasync, so an interrupted write leaves the previous value readable.
    The file never grows after creation, so an update needs no free space."""

    SLOT = 32

    def __init__(self, path: Path, fd: int, value: int, fsync: bool) -> None:
        self.path, self._fd, self.value, self._fsync = path, fd, value, fsync
        self._slot = 0

    @staticmethod
    def _encode(value: int) -> bytes:
        digits = b"%021d" % value
        return b"%08x %s\n" % (zlib.crc32(digits), digits) + b" "   # 32 bytes

    @classmethod
    def read(cls, path: Path) -> Optional[int]:
        """The value, None when the file is missing; OSError/ValueError when it is damaged."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        values = []
        for off in (0, cls.SLOT):
            slot = data[off:off + cls.SLOT]
            crc, _, digits = slot[:30].partition(b" ")
            if len(slot) == cls.SLOT and len(crc) == 8 and digits.isdigit() and \
                    int(crc, 16) == zlib.crc32(digits):
                values.append(int(digits))
        if not values:
            raise ValueError(f"high-water mark {path} is damaged ({len(data)} bytes, no valid "
                             "slot)")
        return max(values)

    @classmethod
    def open(cls, path: Path, value: int, fsync: bool = True) -> "Mark":
        """Open (creating it when missing) and set both slots to `value`, durably, before anything
        may depend on it. Rewriting the existing 64 bytes needs no free space."""
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            n = os.pwrite(fd, cls._encode(value) * 2, 0)
            if n != 2 * cls.SLOT:
                raise OSError(errno.EIO, f"short write to {path} ({n} of {2 * cls.SLOT} bytes)")
            os.ftruncate(fd, 2 * cls.SLOT)
            if fsync:
                os.fsync(fd)
                if created:
                    fsync_dir(path)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, value, fsync)

    def write(self, value: int) -> None:
        """Record `value` durably, in the slot the previous write did not use."""
        data = self._encode(value)
        self._slot ^= 1
        n = os.pwrite(self._fd, data, self._slot * self.SLOT)
        if n != len(data):
            raise OSError(errno.EIO, f"short write to {self.path} ({n} of {len(data)} bytes)")
        if self._fsync:
            os.fdatasync(self._fd)
        self.value = value

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
