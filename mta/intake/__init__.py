"""Intake: the one way in for every message this MTA takes responsibility for (X.411 14).

A peer's transfer, a local submission, a transfer too long to take in, one that cannot be
taken in (quarantined) and the reports this MTA originates all pass through
:class:`mta.intake.intake.Intake`: planned (trace, loop check, routing), committed to the
queue in one transaction, and only then acknowledged, logged and announced.
"""
