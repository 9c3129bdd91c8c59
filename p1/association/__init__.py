"""The P1 association between two MTAs (X.419 clause 7, X.411 clause 12.1), sans-I/O.

Modules::

    connection  P1Association: the upper-layer stack composed, the only object mta/ drives
    events      what the association tells its user (MTA-BIND, RT-TRANSFER, turn, close)
    machine     the association's states, inputs and transition table
    pdus        the PPDU / ACSE / RTSE wrappings of bind, release and abort
    mtabind     MTABindArgument, MTABindResult, MTABindError (X.411 12.1.1)
    transfer    the EXTERNAL that carries an MTS-APDU in an RT-TRANSFER
"""
