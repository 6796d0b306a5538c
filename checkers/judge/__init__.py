"""The judge's room: whether Kafka's rules permitted each anomaly (rules), the claims that name an excuse's cause
(claims), the transaction-marker and earlier-send claims the rules ask for (markers, earlier_sends), and the
files a judged run writes (verdict_file)."""
