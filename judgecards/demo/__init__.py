"""``judgecards demo``: real judges' recorded verdicts beside real human labels, offline.

`datasets` reads the shipped data (``data/``, with its licences in ``data/ATTRIBUTION.md``),
`recorded` is the provider that replays the recorded verdicts through the pairwise card, and
`walkthrough` stores them and computes every figure the command prints.
"""
