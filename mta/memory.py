"""How the daemon's process gives the memory of large buffers back to the system.

A 10 MB message is held a few times over while it is taken in or relayed (the octets
read, the MTS-APDU encoded, the TSDU received), and each copy is freed soon after.  glibc
allocates a block this large with mmap(2) and unmaps it when freed, but only at first:
freeing such a block raises its mmap threshold to the block's size (malloc(3),
M_MMAP_THRESHOLD, "dynamic"), so the next 10 MB copies come from the heap, and what is
freed there stays part of the process (up to twice that threshold is not trimmed).  The
peak resident size then counts the copies of earlier messages as well as the live
ones.  Setting the threshold once turns that adjustment off: a block of
:data:`LARGE_BUFFER` octets or more is always mapped on its own and unmapped when freed.

Public API::

    LARGE_BUFFER
    give_back_large_buffers(threshold=LARGE_BUFFER) -> bool   (False: not glibc)
"""

from __future__ import annotations

import ctypes
import sys
from typing import Final

LARGE_BUFFER: Final = 4 * 1024 * 1024
"""Octets from which a block is mapped on its own: the copies of messages of several
megabytes, not those of a 1 MB message.  Mapping and unmapping each of these (and
faulting its pages in anew) took a quarter of the 1 MB relay's rate; kept in the heap they
leave a daemon relaying them from eight clients about 7 MiB larger at its peak."""

_M_MMAP_THRESHOLD: Final = -3
"""mallopt(3)'s parameter number for M_MMAP_THRESHOLD (glibc's malloc.h)."""


def give_back_large_buffers(threshold: int = LARGE_BUFFER) -> bool:
    """Have blocks of ``threshold`` octets or more mapped on their own and given back to
    the system when freed (see the module docstring); whether the C library took it
    (False on a C library other than glibc, or off Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))
