"""kafka-chaos base: what every layer stands on (errors with their remedies, paths, waiting)."""
