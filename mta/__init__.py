"""The asyncio daemon: listeners, peer channels, queue manager, routing and reports."""
