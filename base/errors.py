"""Errors a user can act on: each names the cause and the remedy, and the CLI exits 2 on them."""


class HarnessError(Exception):
    """Bad input or a broken environment. `remedy` says what to do about it."""

    exit_code = 2

    def __init__(self, cause: str, remedy: str = ""):
        self.cause = cause
        self.remedy = remedy
        super().__init__(cause + (f"\n  remedy: {remedy}" if remedy else ""))


class UsageError(HarnessError):
    """A wrong argument: an unknown scenario, fault, version or profile value."""


class EnvironmentProblem(HarnessError):
    """Docker, Maven, Java or a port is missing or broken."""
