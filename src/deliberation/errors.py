"""The one exception type users see: a one-line message that names the problem and the fix."""


class DelibError(Exception):
    """A user-facing error. ``str(err)`` is one line; the CLI prints it and exits non-zero."""


def install_hint(package: str, extra: str) -> str:
    """The message for a missing optional dependency."""
    return f"{package} is not installed; install it with: pip install 'deliberation[{extra}]'"
