"""kafka-chaos harness: the Kafka distribution, its image, the Docker cluster, the runner and the CLI."""
