"""kafka-chaos history: docs/history.md as code, the contract between recording a run and judging it."""
