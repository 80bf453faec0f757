"""The subcommands of ``payload-estimator``; each module has ``add_parser`` and ``run``."""


class CommandError(Exception):
    """A problem with the user's input: printed as one line, exit status 2."""
