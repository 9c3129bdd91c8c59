"""Inbound: listeners, the admission guard, and what peers' associations hand to intake.

Everything a peer can make the daemon do before it has bound is bounded here
(:mod:`mta.inbound.guard`); once it has bound, its transfers go to intake through the
transport seam (:mod:`mta.transport`).
"""
