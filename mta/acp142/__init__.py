"""STANAG 4406 Annex E over ACP 142: the second transport (:mod:`mta.transport`).

link      this MTA's P_MUL node on UDP: pacer, timer, inbound to intake
channel   one peer's channel: queued messages handed to the link, outcomes marked
"""
