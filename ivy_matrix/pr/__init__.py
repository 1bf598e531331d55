"""The pull request's view: verdicts against the default branch (pure), the sticky comment's state and body (pure) and its writer (I/O)."""
