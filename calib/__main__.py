"""`python -m calib`: the same as the `calib` command."""

from calib.cli import main

main()
