"""kafka-chaos checkers: read a results directory, find anomalies on Spark, judge them with the ISR model."""
