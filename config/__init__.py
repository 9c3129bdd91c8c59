"""Configuration schema and loader (TOML), with errors naming file, key and value."""
