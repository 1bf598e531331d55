"""Configuration: every option (``options.py``), the config file (``file.py``), the runner's
event payload (``event.py``) and the resolved ``Settings`` (``settings.py``, the only reader of
the environment).
"""
