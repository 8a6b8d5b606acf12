"""exporter."""
