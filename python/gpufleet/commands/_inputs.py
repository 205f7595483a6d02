"""Input files named on the command line: a file or a pipe, never a device. The trace readers read
a whole file before checking it, so /dev/zero would be read until memory runs out; a named pipe
(`<(zcat trace.csv.gz)`) is still welcome."""
from __future__ import annotations

import os
import stat
from typing import Iterable


def device_among(paths: Iterable[str | None]) -> str | None:
    """The first of ``paths`` that names a character or block device, if any (missing paths and
    folders are left to the readers, which name them)."""
    for path in paths:
        if not path:
            continue
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError):
            continue
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return path
    return None
