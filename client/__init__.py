"""The ``x400`` user client and the ``x400ctl`` operator tool."""
