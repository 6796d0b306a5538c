"""kafka-chaos harness: the driver on top of the house: the runner, the scenario catalog, the CLI, the pytest plugin."""
