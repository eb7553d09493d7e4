"""Who is calling and what they may do: credentials, keys, per-key limits, residency, and the books
(audit and usage) of every turn a key takes."""
