"""Helpers the test suites share: one place for each.

- :mod:`tests.support.sites`: two MTAs on loopback (sites A and B), run in the test's loop;
- :mod:`tests.support.process`: an ``x400-mta`` run as a process;
- :mod:`tests.support.responder`: a scripted P1 responder;
- :mod:`tests.support.tshark`: Wireshark's dissectors judging a capture;
- :mod:`tests.support.golden`: real captures from ``../shared/reference/pcaps``;
- :mod:`tests.support.store_samples`: queue rows and APDUs for the store's tests.
"""
