"""Interpersonal messaging content: IPM and IPN (X.420 clause 7, STANAG 4406 Annex A).

Modules::

    ipm      encode / decode an IPM or IPN (P2 and P772 content); re-exports the models
    models   the IPM and IPN models (frozen dataclasses)
    heading  the heading codec
    fields   the field codecs the heading and the IPN share (IPMIdentifier,
             ORDescriptor, IPMSExtension)
    mm_heading  the STANAG 4406 heading extensions typed as Heading fields
    body     the body codec: body parts, typed or kept as received
"""
