"""The compiled specification: built once per process, cached on disk, invalidated by edits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from p1 import asn1
from p1.errors import DecodeError


def _load_in_child(cache: Path) -> float:
    program = (
        "import time; t = time.perf_counter()\n"
        "from p1.asn1 import spec; spec()\n"
        "print(time.perf_counter() - t)\n"
    )
    env = dict(os.environ, AIOX400_CACHE_DIR=str(cache))
    out = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout)


@pytest.mark.slow
def test_spec_is_cached_on_disk_and_reused(tmp_path: Path) -> None:
    _load_in_child(tmp_path)
    cached = list(tmp_path.glob("asn1-*.pickle"))
    assert len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns
    _load_in_child(tmp_path)
    assert [p.stat().st_mtime_ns for p in tmp_path.glob("asn1-*.pickle")] == [stamp]


def test_cache_key_changes_with_module_text(tmp_path: Path) -> None:
    one = tmp_path / "A.asn"
    one.write_text("A DEFINITIONS ::= BEGIN T ::= INTEGER END\n")
    first = asn1._cache_key([one])
    one.write_text("A DEFINITIONS ::= BEGIN T ::= BOOLEAN END\n")
    assert asn1._cache_key([one]) != first


def test_a_corrupt_or_foreign_cache_file_is_ignored(tmp_path: Path) -> None:
    bad = tmp_path / "asn1-x.pickle"
    bad.write_bytes(b"not a pickle")
    assert asn1._load_cached(bad) is None
    bad.chmod(0o666)
    assert asn1._load_cached(bad) is None


def test_spec_is_compiled_once_per_process() -> None:
    assert asn1.spec() is asn1.spec()


def test_unknown_type_and_bad_bytes() -> None:
    with pytest.raises(KeyError, match=r"NoSuchModule\.T"):
        asn1.codec("NoSuchModule", "T")
    with pytest.raises(DecodeError):
        asn1.decode("MTSAbstractService", "ORName", b"\x60\x05\x30")
