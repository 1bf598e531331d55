"""Dashboard issues, whole: markers and the hidden state block, composing bodies within GitHub's size limit, the writer, the index issue, the two locks, the issue-body store and the issue target.

``markers.py``, ``state_block.py`` and ``bodies.py`` are pure; the rest talks to GitHub through the protocols in ``github/types.py``.
"""
