"""kafka-chaos cluster: a real KRaft cluster in Docker (containers, network, node primitives, image, Kafka jars)."""
