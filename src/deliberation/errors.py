"""The one exception type users see: a one-line message that names the problem and the fix."""


class DelibError(Exception):
    """A user-facing error. ``str(err)`` is one line; the CLI prints it and exits non-zero."""


class Interrupted(DelibError):
    """A backend call stopped early because the run was interrupted (``backends.base.interrupt``)."""

    def __init__(self) -> None:
        super().__init__("this backend was interrupted (Ctrl-C); create a new one to generate again")


def install_hint(package: str, extra: str) -> str:
    """The message for a missing optional dependency."""
    return f"{package} is not installed; install it with: pip install 'deliberation[{extra}]'"


def require_at_least(name: str, value: int, minimum: int = 1, why: str = "") -> None:
    """Refuse a count below ``minimum``: the one wording of every "how many" check (agents, workers,
    concurrency, ...), so the CLI's messages read alike. ``why`` is appended after the bound."""
    if value < minimum:
        reason = f" {why}" if why else ""
        raise DelibError(f"{name} must be at least {minimum}{reason} (got {value})")
