"""kafka-chaos report: the HTML loss report and the suite page, read from results directories only."""
