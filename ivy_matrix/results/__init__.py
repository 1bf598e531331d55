"""Reading: result files (and leg files) into cells, the first stage of the pipeline.

Pure: values and parsing only; the files are opened by the commands.

``junit`` (with ``encodings``) streams JUnit XML in flat memory; ``naming`` says which
dashboard, row and backend a test case belongs to; ``collector`` gathers one update's cells;
``signature`` is a failure line's signature; ``legs`` and ``leg_cells`` are the leg file a
matrix leg writes; ``jobs`` matches a backend to the job that produced it; ``environment`` and
``versions`` are a leg's packages and versioned columns.
"""
