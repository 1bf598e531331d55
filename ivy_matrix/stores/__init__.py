"""Where dashboard state lives between runs: a local folder, a branch, or issue bodies."""
