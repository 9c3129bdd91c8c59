"""benchmarks/hops.py run once on two sites in this process: the message reaches B's
mailbox, and the path it reports goes from the client through A's daemon and the
transfer into B's message store, with figures that agree with the path."""

from __future__ import annotations

from pathlib import Path

from benchmarks.hops import PACKAGES, figures, measure, package_of


async def test_the_path_runs_from_the_client_to_b_s_mailbox(tmp_path: Path) -> None:
    tracer, identifier = await measure(tmp_path)
    result = figures(tracer, "mta")

    assert identifier  # measure() returned only once B's user had it in the mailbox
    path = [(hop["caller"], hop["callee"]) for hop in result.path]
    packages = [(package_of(caller), package_of(callee)) for caller, callee in path]
    assert packages[0][0] == "client"
    submitted = packages.index(("mta", "store"))  # A's daemon stores the submission
    transfer = next(
        n for n, (caller, callee) in enumerate(path)
        if package_of(caller) == "mta" and callee.startswith("p1.association")
    )  # fmt: skip
    delivered = max(n for n, (_, callee) in enumerate(path) if callee == "store.mailbox")
    assert 0 < submitted < transfer < delivered

    assert result.calls >= result.hops == len(result.path) > 100
    assert result.callbacks <= result.returns < result.hops
    assert result.returns == sum(1 for hop in result.path if hop["return"])
    assert set(result.by_package) == set(PACKAGES)
    assert result.modules == sum(result.by_package.values())
    assert result.by_package["mta"] > 5 and result.by_package["store"] > 2
    # the reads of B's mailbox that ended the trace never saw the message's octets
    assert 0 < result.activations_kept < result.activations

    scope = result.scope
    assert scope is not None
    assert scope["inside"] > 0 and scope["out_of"] > 0
    assert scope["hops"] <= result.hops
    assert all("mta" in (package_of(h["caller"]), package_of(h["callee"])) for h in scope["path"])
