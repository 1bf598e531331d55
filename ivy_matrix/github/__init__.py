"""GitHub: the REST client (the only code that imports PyGithub), its transport and retries, our types for what GitHub returns, and the connection a command opens.

I/O, except ``types.py`` and ``retry.py`` (pure).
"""
