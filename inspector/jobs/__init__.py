"""Everything that runs torch. Each job runs in a child process
(`python -m inspector.jobs JOB ...`) and writes one JSON event per line on stdout
(see protocol.py). Cancel = kill the child.
"""
