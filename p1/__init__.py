"""Sans-I/O X.400 P1 (X.411): ASN.1 codec, O/R names, envelopes, content models.

Nothing in this package performs I/O, reads a clock or configures logging.
"""
