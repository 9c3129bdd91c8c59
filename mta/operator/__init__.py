"""The operator's and the local users' side of the daemon: local API, access, metrics, reload.

These modules see the daemon through narrow protocols (:mod:`mta.operator.views`), never
the service object itself.
"""
