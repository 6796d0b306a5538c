"""kafka-chaos nemesis: faults with start/heal aimed at live roles, and seeded schedules."""
