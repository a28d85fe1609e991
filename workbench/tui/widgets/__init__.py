"""The dashboard's widgets, one per file; each draws data it is given and posts messages."""
