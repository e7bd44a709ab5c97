"""Built-in capabilities: the file tools ``fs.*`` and ``exec`` (000 §7.3)."""
