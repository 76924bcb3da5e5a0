"""What `calib` alone and `calib --version` print: answered by the console script before the framework
loads (`calib.cli.main`), and by the typer app the same way."""

# What `calib` alone prints: the commands to start with, not every command's options.
START = """\
calib scores the token estimates of AI coding agents against what their providers counted.

Start with:
  calib fit [PATH...]  ingest sessions (default: each agent's data folder), fit, write calibration.json
  calib report         write a markdown report with figures of the store to report/
  calib replay         replay the agents' /context display and compaction rules on every call

calib --help for every command; calib COMMAND --help for its options."""


def version_line() -> str:
    """What `calib --version` prints."""
    from calib.core.version import __version__

    return f"calib {__version__}"
