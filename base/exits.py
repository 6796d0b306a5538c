"""kafka-chaos's exit codes, one table for every command (the README and every --help show it)."""
VALID = 0          # judged, and every guarantee held
VIOLATION = 1      # judged, and a guarantee was broken
UNUSABLE = 2       # bad input or a broken environment: the message names the cause and the remedy
NO_VERDICT = 3     # the run could not be judged (interrupted, or the final drain did not complete)
CRASH = 4          # an internal error: a bug in kafka-chaos, never a verdict

HELP = ("exit codes: 0 valid; 1 a violation; 2 bad input or a broken environment (cause and remedy printed); "
        "3 no verdict (the run could not be judged); 4 an internal error (a bug in kafka-chaos, never a verdict)")
