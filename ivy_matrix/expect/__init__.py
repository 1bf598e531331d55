"""Expectation lists: the per-backend files of tests expected to fail, kept by the history.

Pure. ``lists`` reads and rewrites a list (every line it does not change kept byte for byte);
``proposal`` decides from the stored default-branch history what to add, remove and narrow,
by ``rules``;
``evidence`` is the pull request's body.
"""
