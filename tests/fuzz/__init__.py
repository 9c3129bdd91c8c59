"""Fuzzing of the P1 stack and the daemon with mutated real conversations.

Modules::

    pcap      the TCP conversations of a capture file, read without tshark
    corpus    the conversations: the reference captures, and our initiator and responder
    layers    one side of a conversation cut into TPKT, TPDU, TSDU, SPDU and BER values
    mutate    cases: a conversation changed at one layer, and the reads that deliver it
    drive     a case played to a P1Association (sans-I/O) and the rules checked
    live      cases played over TCP to x400-mta, and what the daemon logged and stored
    test_fuzz the bounded run (pytest); ``python -m tests.fuzz`` the long one
"""
