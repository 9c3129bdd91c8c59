"""Security labels enforced: the policy (an Open XML SPIF), clearances and the access
decision of X.411 8.5.9, sans I/O.

Modules::

    spif        the SPIF read from its bytes: classifications, category tag sets, rules,
                markings, equivalent policies; the clearance type
    categories  the label's security categories in the SPIF's tag encodings (ACP 145)
    clearance   clearances, the access decision, the display marking
    naming      a label made from the names of its classification and categories
    ess         the ESS security label (RFC 2634) read into the same model
"""
