"""Analysis: replay of the agents' compaction rules, the report and its figures, the gate, the bench."""
