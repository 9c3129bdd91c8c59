"""Outbound: what this MTA sends to its peers, slot by slot, in precedence order.

The connection slots of each peer (:mod:`mta.outbound.channels`), the queue manager's
pure decisions (:mod:`mta.outbound.schedule`), the queue's side of a transfer (claim,
confirm, put back: :mod:`mta.outbound.units`) and what a claimed entry becomes on the
wire for a peer's protocol (:mod:`mta.outbound.outgoing`).
"""
