"""Tables to what a person reads: the spreadsheet, charts, report pages, the 2019 CSVs, the
lines a run prints at its end, and the config keys' page (config/README.md, from the schema)."""
