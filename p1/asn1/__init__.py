"""The project's ASN.1 modules and the compiled BER codec built from them.

The ``*.asn`` files beside this module are the X.400 (X.411, X.420), STANAG 4406 (P772),
ACSE (X.227), presentation (X.226), RTSE (X.228), ROS (X.880) and X.500/X.509 modules,
written from the standards' modules and adapted only where asn1tools needs it (each
adaptation is commented in the file with ``-- aiox400:``).

Public API::

    spec()                           the compiled specification (once per process)
    encode(module, type_name, value) -> bytes
    decode(module, type_name, data)  -> value  (raises p1.errors.DecodeError only)

Compiling takes about a second; the result is cached on disk (see :func:`cache_dir`),
keyed by the module texts and the codec versions, so later processes load it in
milliseconds.  Values are asn1tools' Python forms (dicts, tuples for CHOICE); the typed
models in ``p1`` translate them to dataclasses.

asn1tools is used as published, never patched.  The PDUs on the wire are read and
written by the project's own codecs (:mod:`p1.ber`); asn1tools, an independent reading
of the same modules, is what the tests check those codecs against, and reads the
extension values :mod:`p1.mts.extension_view` shows to people.  It does not read every
legal BER form (an open type or an extensible SEQUENCE in the indefinite form, a tag
number below 31 in the high-number form): a caller gives it a value in definite,
low-tag form (:func:`p1.mts.extension_view.normalised`).

asn1tools is imported when first needed, not with this module: with its parser and its
codecs it adds about 28 MB to a process, which a daemon that never shows an extension
nor reads a common name in another form does not pay.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from p1.errors import DecodeError, EncodeError

ASN1_DIR = Path(__file__).resolve().parent


def _asn1tools() -> ModuleType:
    """asn1tools, imported on first use (module docstring)."""
    return importlib.import_module("asn1tools")


def module_files() -> list[Path]:
    """The project's ASN.1 module files, in a stable order."""
    return sorted(ASN1_DIR.glob("*.asn"))


def cache_dir() -> Path:
    """Where the compiled specification is cached.

    ``$AIOX400_CACHE_DIR``, else ``$XDG_CACHE_HOME/aiox400``, else ``~/.cache/aiox400``.
    """
    explicit = os.environ.get("AIOX400_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "aiox400"


def _cache_key(files: list[Path]) -> str:
    digest = hashlib.sha256()
    digest.update(f"{_asn1tools().__version__}/{sys.version}".encode())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _load_cached(path: Path) -> Any:
    # Only our own cache directory (created 0700, owned by us) is trusted with pickles.
    try:
        info = path.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            return None
        with path.open("rb") as handle:
            return pickle.load(handle)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError):
        return None


def _store_cached(path: Path, compiled: Any) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".asn1-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(compiled, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, pickle.PickleError, RecursionError):
        pass  # a cache that cannot be written costs start-up time, nothing else


def compile_uncached() -> Any:
    """Compile the modules now, ignoring the disk cache (for tests and benchmarks)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        return _asn1tools().compile_files([str(p) for p in module_files()], codec="ber")
    finally:
        sys.setrecursionlimit(limit)


@functools.cache
def spec() -> Any:
    """The compiled specification, compiled or loaded from the cache once per process."""
    files = module_files()
    path = cache_dir() / f"asn1-{_cache_key(files)}.pickle"
    compiled = _load_cached(path)
    if compiled is None:
        compiled = compile_uncached()
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10_000))
        try:
            _store_cached(path, compiled)
        finally:
            sys.setrecursionlimit(limit)
    return compiled


@functools.cache
def codec(module: str, type_name: str) -> Any:
    """The compiled type ``module.type_name`` (asn1tools ``CompiledType``)."""
    try:
        return spec().modules[module][type_name]
    except KeyError:
        raise KeyError(f"no ASN.1 type {module}.{type_name}") from None


def encode(module: str, type_name: str, value: Any) -> bytes:
    """BER-encode ``value`` as ``module.type_name``; raises :class:`EncodeError`."""
    try:
        return bytes(codec(module, type_name).encode(value))
    except _asn1tools().Error as exc:
        raise EncodeError(str(exc), where=type_name) from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise EncodeError(f"{type(exc).__name__}: {exc}", where=type_name) from exc


def decode(module: str, type_name: str, data: bytes | bytearray | memoryview) -> Any:
    """Decode BER ``data`` as ``module.type_name``; raises only :class:`DecodeError`.

    Trailing bytes after the value are an error.
    """
    value, end = decode_with_length(module, type_name, data)
    if end != len(data):
        raise DecodeError(f"{len(data) - end} trailing byte(s) after the value", where=type_name)
    return value


def decode_with_length(
    module: str, type_name: str, data: bytes | bytearray | memoryview
) -> tuple[Any, int]:
    """Decode the value at the start of ``data``; return it and the bytes it used."""
    try:
        value, end = codec(module, type_name).decode_with_length(data)
    except _asn1tools().Error as exc:
        raise DecodeError(str(exc), where=type_name) from exc
    # asn1tools lets some malformed inputs escape as plain Python errors (bad time
    # strings, bad text encodings, truncated tags): they are decode errors too.
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError) as exc:
        why = f"malformed input ({type(exc).__name__}: {exc})"
        raise DecodeError(why, where=type_name) from exc
    return value, int(end)
