"""kafka-chaos's exit codes, one table for every command: every --help shows it and the documentation's exit-code
reference (docs/reference/exit-codes.md) is generated from MEANING."""
VALID = 0          # judged, and every guarantee held
VIOLATION = 1      # judged, and a guarantee was broken
UNUSABLE = 2       # bad input or a broken environment: the message names the cause and the remedy
NO_VERDICT = 3     # the run could not be judged (interrupted, or the final drain did not complete)
CRASH = 4          # an internal error: a bug in kafka-chaos, never a verdict
INTERRUPTED = 130  # Ctrl-C or SIGTERM outside a run's own handling (a run interrupted mid-way exits NO_VERDICT)

MEANING = {
    VALID: "judged, every guarantee held (or, for commands that judge nothing, done)",
    VIOLATION: "judged, a guarantee was broken",
    UNUSABLE: "bad input or a broken environment: the message names the cause and the remedy (also: `nemesis heal` "
              "could not undo everything)",
    NO_VERDICT: "no verdict: the run was interrupted or its final drain did not complete",
    CRASH: "an internal error: a bug in kafka-chaos (the traceback is printed), never a verdict",
    INTERRUPTED: "interrupted by Ctrl-C or SIGTERM before a command could finish on its own terms",
}

HELP = ("exit codes: 0 valid; 1 a violation; 2 bad input or a broken environment (cause and remedy printed); "
        "3 no verdict (the run could not be judged); 4 an internal error (a bug in kafka-chaos, never a verdict)")
