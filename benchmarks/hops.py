"""The path of one message through the code: module-to-module hops from ``x400 send`` at
site A to the message's entry in the message store at site B.

    python benchmarks/hops.py [--modules mta] [--json] [--runs 5] [--verbose]

Two MTAs run in this one process on loopback, built as the daemon's tests build them
(:class:`tests.support.sites.Lab`: a temporary directory, each site's configuration written
as TOML and read back by the loader), every slot permanent so that the message finds its
association already bound.  Once every slot of both sites is bound, one warm-up message
goes A -> B (so that what a first message alone does, such as filling caches, is not
counted), and the sites are left to settle.  Then a profiler is installed in every
thread (``threading.setprofile`` before the sites start, switched on only now;
``sys.setprofile`` in the event loop's thread), one routine message is submitted as
``x400 send`` does (``client.x400.main`` in a worker thread), and the profiler is
switched off once the message is in B's user's mailbox (read through B's local API).

What is recorded: every Python call whose callee is a project module (top package
``p1``, ``mta``, ``store``, ``client`` or ``config``; a module is a file, such as
``mta.channels``) made from a project module other than its own.  The caller is the
nearest project frame below the callee on its thread's stack: frames of the standard
library and of other packages between the two (asyncio, functools.partial, SQLAlchemy,
argparse), and the stage marks of ``mta.stages``, are looked through, so that
``mta.channels`` handing ``mta.units.claim_in`` to the database thread's dispatcher, or
SQLAlchemy calling a column type of ``store.models``, are hops of the module that asked.
A generator or coroutine is called once, when it starts; its resumptions (a task's next
step, the next item) are not calls.  A task's coroutine started by the event loop, a
callback run by the loop, the body of a thread: each is called by no project frame, so it
starts a path of its own, not a hop.

Which calls belong to this message, not to the daemon's idle work: the selection is by
the message's own octets.  The message's body is a marker unique to the run, submitted
as text; its octets travel unchanged from the client's arguments through the submission,
the spool, the transfer and the intake to the mailbox.  The calls are grouped in
*activations*: everything a thread does from the moment a project frame with no project
frame below it is entered until it returns or yields (one step of an asyncio task, one
callback of the event loop, one piece of work a worker or database thread runs).  An
activation is kept whole when some project call in it received, as an argument (or as an
element of a list or tuple argument), ``bytes``, ``bytearray``, ``memoryview`` or ``str``
containing the marker; otherwise it is dropped.  The database thread commits whatever
units of work wait in one transaction (group commit), so an idle poll may share the
transaction of the message's unit, and the thread may go on to the next transaction
before it returns: within an activation, each call that receives a SQLAlchemy ``Session``
or ``Engine`` (when no enclosing call in the activation did; for a resumed generator,
that holds one) is a unit of store work, kept only if it saw the marker itself.  So the
opening and the commit of a transaction (``store.transaction(engine)``), shared by the
units it holds, are counted with none of them.  So the expiry, retention and idle claim and
delivery polls, the slots' backlog checks and this benchmark's own reads of B's mailbox
are excluded (their activations never see the message's octets), and so is the work the
message causes without touching its octets: the step that reads a result and answers the
client, a slot's supervisor woken by the submission, the confirmation of the transfer at
A, the logging and wake-ups after B's commit.  What is counted is the path of the
message's content, from ``x400 send`` to the mailbox entry.

Order: kept activations by the moment they started, each activation's calls in the order
they were made (activations of different threads that overlap in time are not
interleaved).  Definitions, over that ordered list:

* *hop*: one recorded call, written ``caller module -> callee module  function``; the
  path collapses a run of identical consecutive hops (same caller module, callee module
  and function) into one.  *hops* is the length of the collapsed path (*calls* the
  number before collapsing).
* *return*: a hop into a module X that is the caller of an earlier hop on the path: X
  called another module (the path left X), and now some module calls into X again.  A
  module only ever called (a leaf, such as ``p1.ber.reader``) is never returned into,
  however often it is called; a module that called out is returned into whether its
  earlier call is still under way or long over, in the same activation or a later one.
* *call-back*: a return into a module that has a frame on the calling thread's stack at
  that moment (X calls Y, and Y, or a module Y called, calls back into X before X's call
  is over): the narrower, cyclic kind of return.
* *modules*: the distinct modules on the path (callers and callees), by package.

``--modules PKG`` (e.g. ``mta``) restricts the path to the hops with at least one side in
PKG, collapses it again, and counts: hops inside PKG, crossings out of PKG and into PKG,
returns and call-backs into PKG's modules (returns over the restricted path), and PKG's
modules visited.

``--runs N`` runs the measurement N times, each in a fresh process, prints each run's
figures and says whether the path was the same every time (exit status 1 if not).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import dis
import itertools
import json
import logging
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# --- the project's names (the only place to update when modules move) --------------------
from sqlalchemy import Engine  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from tests.support.sites import Lab, Site, SlotSpec  # noqa: E402

# Besides these, :func:`all_bound` reads ``Service.runners`` and ``SlotRunner.snapshot()``,
# :func:`measure` sets ``Site.expiry_interval``, and :func:`_thread_kind` knows the name of
# the database thread (``mta.database``).
DATABASE_THREAD = "aiox400-db"
STORE_HANDLES = (Session, Engine)
"""What a call that starts a unit of store work receives (see the module docstring)."""

PACKAGES = ("p1", "mta", "store", "client", "config")
"""The project's top packages: a module is the project's when its name starts with one."""

LOOKED_THROUGH = frozenset({"mta.stages"})
"""Project modules counted as a library is: the stage marks of ``benchmarks/stages.py``
are instruments, not steps of the message's path."""

SLOTS = (
    SlotSpec(("override", "flash"), "CS3"),
    SlotSpec(("immediate",), "CS2"),
    SlotSpec(("priority",), "CS1"),
    SlotSpec(("routine", "deferred"), "CS0"),
)
"""The lab's four slots, all permanent: the message's association is bound before it."""

SENDER = "Smith"
RECIPIENT = "Jones"
SUBJECT = "path of one message"
DEADLINE = 60.0
"""Seconds the sites may take to bind, or a message to arrive: reached only on a fault."""
SETTLE = 0.5
"""Seconds left after the warm-up message, for the confirmations and wake-ups it caused."""
_POLL = 0.02

_RESUMABLE = 0x20 | 0x80 | 0x100 | 0x200
"""CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR."""
_MISSING = object()


# --- the profiler ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hop:
    """One call from a project module into another."""

    caller: str
    callee: str
    function: str
    thread: str
    callback: bool = False
    """The callee's module has a frame on the thread's stack (see the module docstring)."""


@dataclass
class _Unit:
    """A unit of store work (a call that received a Session or an Engine) in an activation."""

    frame: FrameType
    hops: list[tuple[int, Hop]] = field(default_factory=list)
    hot: bool = False


@dataclass
class _Activation:
    """What one thread did from entering a root project frame until it left it."""

    root: FrameType
    start: int
    label: str
    thread: str
    hops: list[tuple[int, Hop]] = field(default_factory=list)
    hot: bool = False
    unit: _Unit | None = None
    units_dropped: int = 0


@dataclass(frozen=True, slots=True)
class Kept:
    """An activation that saw the message: where it started, what it was, its hops."""

    start: int
    label: str
    thread: str
    hops: tuple[Hop, ...]


class Tracer:
    """A profile function for every thread that records the hops of the activations that
    carry ``marker`` (see the module docstring); idle until :attr:`active` is set."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.marker_octets = marker.encode("ascii")
        self.active = False
        self.kept: list[Kept] = []
        self.activations = 0
        self.units_dropped = 0
        self._modules: dict[CodeType, str | None] = {}
        self._entries: dict[CodeType, int] = {}
        self._open: dict[int, _Activation] = {}
        self._sequence = itertools.count()
        self._lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if not self.active:
            return
        if event == "call":
            self._call(frame)
        elif event == "return":
            self._return(frame)

    def flush(self) -> None:
        """End the activations still open (after :attr:`active` is cleared)."""
        for ident in list(self._open):
            self._finish(ident)

    # events

    def _call(self, frame: FrameType) -> None:
        code = frame.f_code
        callee = self._module(code, frame)
        if callee is None:
            return
        caller, root, stack = self._below(frame)
        ident = threading.get_ident()
        activation = self._open.get(ident)
        if activation is None or activation.root is not root:
            if activation is not None:
                self._finish(ident)
            activation = self._start(ident, root)
        arguments = frame.f_locals.values()  # (of a resumed frame: all its locals)
        if activation.unit is None and any(isinstance(v, STORE_HANDLES) for v in arguments):
            activation.unit = _Unit(frame)
        if code.co_flags & _RESUMABLE and frame.f_lasti > self._entry(code):
            return  # a resumption, not a call
        into = activation.unit or activation
        if caller is not None and caller != callee:
            hop = Hop(caller, callee, code.co_qualname, activation.thread, callee in stack)
            into.hops.append((next(self._sequence), hop))
        if not into.hot and self._carries(arguments):
            into.hot = activation.hot = True

    def _return(self, frame: FrameType) -> None:
        activation = self._open.get(threading.get_ident())
        if activation is None:
            return
        unit = activation.unit
        if unit is not None and unit.frame is frame:
            self._close_unit(activation, unit)
        if activation.root is frame:
            self._finish(threading.get_ident())

    # activations

    def _start(self, ident: int, root: FrameType) -> _Activation:
        name = threading.current_thread().name
        label = f"{self._module(root.f_code, root)}.{root.f_code.co_qualname}"
        activation = _Activation(root, next(self._sequence), label, _thread_kind(name))
        self._open[ident] = activation
        return activation

    def _close_unit(self, activation: _Activation, unit: _Unit) -> None:
        activation.unit = None
        if unit.hot:
            activation.hops += unit.hops
        else:
            activation.units_dropped += 1

    def _finish(self, ident: int) -> None:
        activation = self._open.pop(ident, None)
        if activation is None:
            return
        if activation.unit is not None:
            self._close_unit(activation, activation.unit)
        hops = tuple(hop for _, hop in sorted(activation.hops, key=lambda pair: pair[0]))
        with self._lock:
            self.activations += 1
            self.units_dropped += activation.units_dropped
            if activation.hot:
                kept = Kept(activation.start, activation.label, activation.thread, hops)
                self.kept.append(kept)

    # frames

    def _module(self, code: CodeType, frame: FrameType) -> str | None:
        module = self._modules.get(code, _MISSING)
        if module is _MISSING:
            name = frame.f_globals.get("__name__")
            project = (
                isinstance(name, str)
                and name.partition(".")[0] in PACKAGES
                and name not in LOOKED_THROUGH
            )
            module = self._modules[code] = name if project else None
        assert module is None or isinstance(module, str)
        return module

    def _below(self, frame: FrameType) -> tuple[str | None, FrameType, set[str]]:
        """The nearest project module below ``frame``, the outermost project frame of the
        thread's stack (``frame`` if none is below it), the project modules below it."""
        caller: str | None = None
        root = frame
        stack: set[str] = set()
        below = frame.f_back
        while below is not None:
            module = self._module(below.f_code, below)
            if module is not None:
                if caller is None:
                    caller = module
                stack.add(module)
                root = below
            below = below.f_back
        return caller, root, stack

    def _entry(self, code: CodeType) -> int:
        """The offset at which a call of ``code`` starts (its first RESUME)."""
        entry = self._entries.get(code)
        if entry is None:
            entry = next(i.offset for i in dis.get_instructions(code) if i.opname == "RESUME")
            self._entries[code] = entry
        return entry

    def _carries(self, values: Iterable[object]) -> bool:
        for value in values:
            if isinstance(value, list | tuple):
                if any(self._holds(item) for item in value[:32]):
                    return True
            elif self._holds(value):
                return True
        return False

    def _holds(self, value: object) -> bool:
        if isinstance(value, str):
            return self.marker in value
        if isinstance(value, bytes | bytearray):
            return self.marker_octets in value
        if isinstance(value, memoryview) and value.nbytes < 1 << 24:
            return self.marker_octets in value.tobytes()
        return False


def _thread_kind(name: str) -> str:
    if name == "MainThread":
        return "loop"
    if name.startswith(DATABASE_THREAD):
        return "database"
    return "worker"


# --- the figures -------------------------------------------------------------------------


def package_of(module: str) -> str:
    return module.partition(".")[0]


def collapse(hops: Iterable[Hop]) -> list[Hop]:
    """``hops`` with each run of identical consecutive hops (caller, callee, function)
    written once."""
    path: list[Hop] = []
    for hop in hops:
        last = path[-1] if path else None
        if last is None or (last.caller, last.callee, last.function) != (
            hop.caller,
            hop.callee,
            hop.function,
        ):
            path.append(hop)
    return path


def returns(path: Sequence[Hop]) -> list[bool]:
    """For each hop of ``path``: whether it is a return (its callee is the caller of an
    earlier hop: the path left that module before)."""
    left: set[str] = set()
    flags = []
    for hop in path:
        flags.append(hop.callee in left)
        left.add(hop.caller)
    return flags


def modules_by_package(path: Iterable[Hop], only: str | None = None) -> dict[str, int]:
    modules = {m for hop in path for m in (hop.caller, hop.callee)}
    if only is not None:
        modules = {m for m in modules if package_of(m) == only}
    counts = {package: 0 for package in PACKAGES if only in (None, package)}
    for module in modules:
        counts[package_of(module)] += 1
    return counts


@dataclass(frozen=True, slots=True)
class Figures:
    """What one measurement found."""

    hops: int
    calls: int
    returns: int
    callbacks: int
    modules: int
    by_package: dict[str, int]
    activations: int
    activations_kept: int
    units_dropped: int
    path: list[dict[str, Any]]
    scope: dict[str, Any] | None = None
    sites: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Per site (A: up to B's reading of the transfer; B: from it on), its hops and its
    returns counted afresh: A and B run the same modules, and a module B uses after A did
    is no return of the path into a module it left."""


def _receives(kept: Kept) -> bool:
    """Whether ``kept`` is where B reads the transfer: a hop into the association's
    ``receive_data`` among the activations that carry the message (A's reading of the
    confirmation is a resumption, and carries nothing)."""
    return any(
        hop.callee.startswith("p1.association") and hop.function.endswith("receive_data")
        for hop in kept.hops
    )


def by_site(kept: Sequence[Kept], scope: str | None) -> dict[str, dict[str, int]]:
    """Each site's hops and returns (``scope``: only hops with a side in that package,
    and only returns into it)."""
    boundary = next((n for n, k in enumerate(kept) if _receives(k)), len(kept))
    sites: dict[str, dict[str, int]] = {}
    for site, part in (("A", kept[:boundary]), ("B", kept[boundary:])):
        calls = [hop for activation in part for hop in activation.hops]
        if scope is not None:
            calls = [h for h in calls if scope in (package_of(h.caller), package_of(h.callee))]
        path = collapse(calls)
        back = returns(path)
        into = [
            r for hop, r in zip(path, back, strict=True) if scope in (None, package_of(hop.callee))
        ]
        sites[site] = {"hops": len(path), "returns": sum(into)}
    return sites


def figures(tracer: Tracer, scope: str | None) -> Figures:
    kept = sorted(tracer.kept, key=lambda k: k.start)
    calls = [hop for activation in kept for hop in activation.hops]
    path = collapse(calls)
    back = returns(path)
    by_package = modules_by_package(path)
    return Figures(
        hops=len(path),
        calls=len(calls),
        returns=sum(back),
        callbacks=sum(1 for hop, r in zip(path, back, strict=True) if r and hop.callback),
        modules=sum(by_package.values()),
        by_package=by_package,
        activations=tracer.activations,
        activations_kept=len(kept),
        units_dropped=tracer.units_dropped,
        path=[asdict(hop) | {"return": r} for hop, r in zip(path, back, strict=True)],
        scope=None if scope is None else scoped(calls, scope),
        sites={
            "all": by_site(kept, None),
            **({scope: by_site(kept, scope)} if scope is not None else {}),
        },
    )


def scoped(calls: Sequence[Hop], package: str) -> dict[str, Any]:
    """The figures of ``--modules package`` (see the module docstring)."""
    path = collapse(h for h in calls if package in (package_of(h.caller), package_of(h.callee)))
    back = returns(path)
    into = [
        (hop, r) for hop, r in zip(path, back, strict=True) if package_of(hop.callee) == package
    ]
    inside = sum(1 for hop in path if package_of(hop.caller) == package_of(hop.callee))
    return {
        "package": package,
        "hops": len(path),
        "inside": inside,
        "out_of": sum(1 for hop in path if package_of(hop.caller) == package) - inside,
        "into": sum(1 for hop in path if package_of(hop.callee) == package) - inside,
        "returns": sum(1 for _, r in into if r),
        "callbacks": sum(1 for hop, r in into if r and hop.callback),
        "modules": modules_by_package(path, package)[package],
        "path": [asdict(hop) | {"return": r} for hop, r in zip(path, back, strict=True)],
    }


# --- the two sites -----------------------------------------------------------------------


async def until_true(
    probe: Callable[[], Awaitable[bool]], what: str, timeout: float = DEADLINE
) -> None:
    """Poll ``probe`` until it answers true; a clear error if it
    has not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await probe():
        if time.monotonic() > deadline:
            raise SystemExit(f"hops: not within {timeout:g} s: {what}")
        await asyncio.sleep(_POLL)


def all_bound(site: Site) -> bool:
    """Every slot of ``site`` holds one bound, idle association."""
    for runner in site.running.runners:
        connections = runner.snapshot().connections
        if not connections or any(str(c.state) != "idle" for c in connections):
            return False
    return True


async def send(lab: Lab, body: str) -> str:
    """``x400 send`` at A to B's user, ``body`` as its text; the MTS identifier printed."""
    code, out, err = await lab.a.x400(
        "send", "--socket", str(lab.a.socket),
        "--from", lab.a.address(SENDER), "--to", lab.b.address(RECIPIENT),
        "--precedence", "routine", "--subject", SUBJECT, "--body", body,
    )  # fmt: skip
    if code != 0:
        raise SystemExit(f"hops: x400 send failed ({code}): {err.strip()}")
    return out.strip()


async def arrived(lab: Lab, identifier: str) -> None:
    """Wait until the message ``identifier`` is in B's user's mailbox."""

    async def probe() -> bool:
        inbox = await lab.b.inbox(lab.b.address(RECIPIENT))
        return any(entry["mts_identifier"] == identifier for entry in inbox)

    await until_true(probe, f"{identifier} in B's mailbox")


async def quiet(lab: Lab) -> None:
    """Wait until both sites' associations are bound and idle."""

    async def probe() -> bool:
        return all_bound(lab.a) and all_bound(lab.b)

    await until_true(probe, "every slot of A and B bound and idle")


def marker() -> str:
    """A body no other message carries (the same length in every run)."""
    return f"path-of-one-message-{uuid.uuid4().hex}"


async def measure(directory: Path, tracer: Tracer | None = None) -> tuple[Tracer, str]:
    """Run the two sites in ``directory``, trace one message; the tracer and the message's
    MTS identifier (in B's mailbox when this returns).

    The caller installs ``tracer`` with ``threading.setprofile`` before the loop starts
    its threads (as :func:`run` does); a tracer made here covers only threads started
    from now on."""
    if tracer is None:
        tracer = Tracer(marker())
        threading.setprofile(tracer)
    lab = Lab.create(directory, SLOTS)
    lab.a.expiry_interval = lab.b.expiry_interval = 3600.0
    try:
        await lab.start()
        await quiet(lab)
        await arrived(lab, await send(lab, marker()))
        await quiet(lab)
        await asyncio.sleep(SETTLE)
        sys.setprofile(tracer)
        tracer.active = True
        try:
            identifier = await send(lab, tracer.marker)
            await arrived(lab, identifier)
        finally:
            tracer.active = False
            sys.setprofile(None)
            tracer.flush()
    finally:
        threading.setprofile(None)
        await lab.close()
    return tracer, identifier


# --- output ------------------------------------------------------------------------------


def text(result: Figures, identifier: str) -> str:
    lines = [
        f"The path of one message: x400 send at MTA-A -> {identifier} in MTA-B's store",
        "",
        f"{'#':>4}  {'thread':8}  {'caller module -> callee module':58}  function",
    ]
    for n, hop in enumerate(result.path, 1):
        flag = " (call-back)" if hop["callback"] and hop["return"] else ""
        flag = flag or (" (return)" if hop["return"] else "")
        modules = f"{hop['caller']} -> {hop['callee']}"
        lines.append(f"{n:>4}  {hop['thread']:8}  {modules:58}  {hop['function']}{flag}")
    packages = ", ".join(f"{p} {c}" for p, c in result.by_package.items())
    lines += [
        "",
        f"hops {result.hops} (calls {result.calls} before collapsing runs), "
        f"returns {result.returns} (of which call-backs {result.callbacks}), "
        f"modules {result.modules} ({packages})",
        f"selection: {result.activations_kept} of {result.activations} activations kept "
        f"(they carried the message's octets); {result.units_dropped} units of store work "
        "dropped from them or others",
    ]
    if result.scope is not None:
        s = result.scope
        lines += [
            f"{s['package']}/ only: hops {s['hops']} (inside {s['inside']}, "
            f"out of {s['package']} {s['out_of']}, into {s['package']} {s['into']}), "
            f"returns into {s['package']} {s['returns']} (call-backs {s['callbacks']}), "
            f"{s['package']} modules {s['modules']}"
        ]
    for name, sites in result.sites.items():
        per = "; ".join(
            f"site {s}: hops {v['hops']}, returns {v['returns']}" for s, v in sites.items()
        )
        lines.append(f"by site ({'all packages' if name == 'all' else name + '/ only'}): {per}")
    return "\n".join(lines)


def one(args: argparse.Namespace) -> int:
    if not args.verbose:  # the sites' warnings (a peer not listening yet at start-up)
        logging.getLogger().addHandler(logging.NullHandler())
    tracer = Tracer(marker())
    threading.setprofile(tracer)
    with tempfile.TemporaryDirectory(prefix="hops-") as directory:
        tracer, identifier = asyncio.run(measure(Path(directory), tracer))
    result = figures(tracer, args.modules)
    if args.json:
        print(json.dumps(asdict(result) | {"message": identifier}, indent=1))
    else:
        print(text(result, identifier))
        if args.verbose:
            print("\nactivations kept:")
            for kept in sorted(tracer.kept, key=lambda k: k.start):
                print(f"  {kept.thread:8}  {kept.label}  ({len(kept.hops)} calls)")
    return 0


_SUMMARY = ("hops", "calls", "returns", "callbacks", "modules")


def many(args: argparse.Namespace) -> int:
    """``--runs N``: each run in a fresh process; their figures and whether they agree."""
    argv = [sys.executable, __file__, "--json"]
    argv += ["--modules", args.modules] if args.modules else []
    results = []
    for n in range(args.runs):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"run {n + 1} failed:\n{done.stderr}", file=sys.stderr)
            return 1
        results.append(json.loads(done.stdout))
    for n, result in enumerate(results, 1):
        row = ", ".join(f"{key} {result[key]}" for key in _SUMMARY)
        if result["scope"]:
            s = result["scope"]
            row += f"; {s['package']}/ hops {s['hops']} inside {s['inside']} out {s['out_of']}"
            row += f" in {s['into']} returns {s['returns']} modules {s['modules']}"
        for name, sites in result["sites"].items():
            row += f"; {name} by site " + " ".join(
                f"{s}:{v['hops']}/{v['returns']}" for s, v in sites.items()
            )
        print(f"run {n}: {row}")
    first = _lines(results[0]["path"])
    differing = [n for n, r in enumerate(results, 1) if _lines(r["path"]) != first]
    if not differing:
        print("the same path in every run")
        return 0
    for n in differing:
        print(f"\nrun {n} against run 1:")
        diff = difflib.unified_diff(first, _lines(results[n - 1]["path"]), lineterm="", n=2)
        print("\n".join(list(diff)[2:]))
    return 1


def _lines(path: Sequence[dict[str, Any]]) -> list[str]:
    return [f"{h['thread']} {h['caller']} -> {h['callee']} {h['function']}" for h in path]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--modules", metavar="PKG", choices=PACKAGES, help="also the hops of PKG")
    parser.add_argument("--json", action="store_true", help="the figures and the path as JSON")
    parser.add_argument("--runs", type=int, default=1, help="runs, each in a fresh process")
    parser.add_argument("--verbose", action="store_true", help="list the activations kept")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return one(args) if args.runs == 1 else many(args)


if __name__ == "__main__":
    sys.exit(main())
