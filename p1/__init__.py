"""Sans-I/O X.400 P1 (X.411): BER, the OSI upper layers, the P1 association, MTS and IPMS data.

Subpackages::

    ber          BER reading and writing (X.690)
    osi          TPKT, transport class 0, session, presentation, ACSE, RTSE
    association  the P1 association: the stack composed, its machine, events, PDUs, MTA bind
    mts          O/R names, envelopes, extensions, trace, reports, relay, precedence (X.411)
    ipms         IPM / IPN models and codecs (X.420, STANAG 4406)
    asn1         the standards' ASN.1 modules and the asn1tools loader

Nothing in this package performs I/O, reads a clock or configures logging.
"""
