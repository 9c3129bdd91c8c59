"""The session protocol's parts (X.225): SPDUs, events, the state table, connection.

The session layer is :mod:`p1.osi.session`, which composes these.
"""
