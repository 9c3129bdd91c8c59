"""The peer-text attacker (:mod:`tests.fuzz.attack_peer_text`) with a fixed seed: random
control characters, escapes and bidirectional overrides in every field a peer chooses
reach no terminal through any command's way of showing them."""

from __future__ import annotations

from tests.fuzz.attack_peer_text import run

SEED = 29
CASES = 300
"""Some 2 s."""


def test_no_command_writes_a_peers_control_characters() -> None:
    outcome = run(SEED, CASES)
    assert outcome.cases == CASES
    assert outcome.problems == []
