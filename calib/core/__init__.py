"""The lowest layer: what every other layer shares and nothing of calib below it.

`records` (the one schema every importer yields and the store writes), `errors` (one-line errors),
`usage` (provider usage normalised into `ctx` and `carry`), `kinds` (part kinds and the groups a
calibration gives their own ratio), `figures` (the rounding of every reported figure), `config`
(the calibration config document: JSON Schema, validation, canonical text), `spool` (frames kept on
disk while a command reads the store a batch at a time), `jsonfile` (the one reader of a JSON file the
user names), `jsontext` (JSON text of a value at any depth), `home` (`~` and `~user` in a path the user
gives), `paths` (file names that are bytes; opening only regular files), `outputs` (the guard and the
whole writes of every output file), `tally` (warnings kept a few per file, the rest counted) and
`printable` (log text made safe to print: control characters shown escaped).
"""
