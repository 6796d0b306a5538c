"""Adversarial probes of the ISR model (issue 32, item 2): each release rule and each rule that excuses a loss put
on its boundary (a tick either side of a session lapse, a shrink at 1.0x and 1.5x the lag time, a restart before
and after fencing, a power loss of each role), and every excuse beside a counter-case where the same loss is a
violation. The scenarios are hand-written fault timelines (the model's input) and, for the judge, synthetic results
directories written through the history contract (tests/checkers/conftest.py)."""
