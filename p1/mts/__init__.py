"""The message transfer system's data: what one MTA transfers to another (X.411, X.402).

Modules::

    envelope    the MTS-APDU: message and probe transfer envelopes (X.411 12.2)
    report      the report transfer envelope and content (X.411 12.2.1.3)
    fields      fields shared by the envelopes (identifiers, flags, content types)
    extensions  envelope extension fields and the typed ones an MTA acts on (X.411 9.1)
    trace       trace and internal trace information (X.411 12.2.1.1.1)
    relay       a received message with this MTA's trace added, other octets as received
    orname      O/R names and addresses (X.402 18), with orname_model, orname_text, orname_ber
    precedence  STANAG 4406 precedence and its P1 priority and DiffServ mappings
"""
