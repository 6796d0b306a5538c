"""The synthetic histories' fixed clock: runs start at 2026-01-01T00:00:00Z, so they are reproducible."""
START_NS = 1_767_225_600_000_000_000
