"""kafka-chaos workloads: producers, consumers, final drain, cluster-state sampler; they write the history."""
