"""Delivery: local recipients into the message store, expiry, restart recovery, retention.

Runs on what intake committed: the local deliverer and the expirer are long-lived parts
of the daemon (:mod:`mta.delivery.local`), their store work units of
:mod:`mta.delivery.units`; users waiting for mail are woken by :mod:`mta.delivery.watch`.
"""
