"""State: what is stored between runs, and how new results fold into it.

Pure: values and the serialized forms; the stores (``stores/``) read and write them.

``entries`` turns cells into the entries a store merges; ``merge`` folds them in run order;
``retirement`` and ``fold`` say what an update or a prune does to the stored states;
``statefile`` and ``columnar`` (with ``records``) are the on-disk forms; ``history`` is what a
cell's recorded results say over time; ``totals``, ``trend``, ``ledger`` and ``paths`` are the
store-wide files.
"""
