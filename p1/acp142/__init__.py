"""ACP 142 (P_MUL) and STANAG 4406 Annex E: messages over constrained and multicast links.

P_MUL is a datagram protocol for reliable multicast where acknowledgements are slow or
impossible (EMCON), as over HF radio: a message goes once to several nodes, each
acknowledges what it has, and only what is missing is sent again.  STANAG 4406 Annex E
carries one MTS-APDU, compressed, as one P_MUL message.

Modules::

    pdu        the PDUs' octets and checksum (ACP 142 clause 3, Annex B)
    sender     one message on its way (the transmitting node's rules)
    receiver   messages arriving (the receiving node's rules)
    node       one node: transmissions, receiver, datagrams in and out
    annex_e    the MTS-APDU in a CDT CompressedData (STANAG 4406 Annex E)

Sans-I/O: nothing here reads a socket or a clock; the adapter is :mod:`mta.acp142`.
"""
