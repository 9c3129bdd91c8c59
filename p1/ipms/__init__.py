"""Interpersonal messaging content: IPM and IPN (X.420 clause 7, STANAG 4406 Annex A).

Modules::

    ipm      encode / decode an IPM or IPN (P2 and P772 content); re-exports the models
    models   the IPM and IPN models (frozen dataclasses)
    heading  the heading codec and the fields it shares with the IPN
    body     the body codec: body parts, typed or kept as received
"""
