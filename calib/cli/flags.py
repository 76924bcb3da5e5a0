"""How the options every command shares are spelled: the typer declarations and the quick path both read these.

Light on purpose: `calib ingest` with nothing to do recognises its command line from these
spellings without loading typer (see `calib.cli`).
"""

from calib.store import DB_ENV as DB_ENV  # the variable that moves the store, named once there

DB = ("--db",)
JSON = ("--json",)
QUIET = ("--quiet", "-q")
VERSION = ("--version", "-V")
