"""Explanations: why cells fail, in words.

Pure: computed from the stored states only.

``history_text`` puts a cell's history in words; ``reasons`` groups failing cells by their
failure signature; ``grouping`` groups failing backends; ``blame`` says whether the code, the
environment or both changed between a cell's last pass and its first failure.
"""
