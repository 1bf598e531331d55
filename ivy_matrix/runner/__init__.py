"""The process's own output: the log (plain lines in a terminal, workflow commands on a runner), step outputs and the job summary file, and atomic file writes.

I/O.
"""
