"""Views: the stored states as people read them, in markdown and pictures.

Pure: text and bytes out; the targets write them.

``dashboards`` draws the dashboard tables, the job summary and the output files; ``tables``
the pipe tables; ``index_page`` the index; ``charts`` the trend's pictures; ``readback`` reads
a table back into state (``adopt``).
"""
