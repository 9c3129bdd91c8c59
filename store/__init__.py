"""Persistence (SQLAlchemy 2): the transit queue, the message store and the audit log."""
