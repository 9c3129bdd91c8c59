"""The store's SQL, one module per table (not public).

:mod:`store.sql.statement` runs the hot statements: literal SQL per dialect on the
driver's cursor.  Each table's statements, hot and cold, are in its module:

    queue      messages and recipients (the transit queue)
    received   the duplicate-detection keys
    mailbox    users' delivered messages and reports
    audit      the audit log
    quarantine what peers transferred that could not be taken in
"""
