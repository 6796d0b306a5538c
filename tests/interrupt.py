"""Children that a test interrupts with SIGINT take it as a terminal's Ctrl-C: a test session started in the
background (`cmd &` in a shell without job control, as some CI runners do) inherits SIGINT ignored, and so would
every process it starts; `preexec_fn=like_a_terminal` gives the child the default disposition back."""
import signal


def like_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
