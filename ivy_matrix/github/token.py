"""Whether a string can be sent as a GitHub token.

Pure: one check, made before any request (``github/client.py``) and when the settings are read
(``config/settings.py``, which then need not import the HTTP transport).
"""

from __future__ import annotations


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be sent as a GitHub token, or None; never quoting the token.

    A token goes in the ``Authorization`` header: white space or a control character in it
    (a secret pasted with a line break, say) makes the header invalid or splits it, and HTTP
    libraries name the header's value in their error, so it is refused before any request.
    GitHub's tokens are printable ASCII (``ghp_...``, ``ghs_...``, ``github_pat_...``).
    """
    for char in token:
        if char in "\r\n":
            return "a line break"
        if char.isspace():
            return "white space"
        if not char.isprintable():
            return "a control or format character"
        if not char.isascii():
            return "a character that is not ASCII"
    return None
