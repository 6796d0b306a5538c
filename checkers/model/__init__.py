"""The ISR model of Kafka's replication protocol, and its check against what the cluster visibly did."""
