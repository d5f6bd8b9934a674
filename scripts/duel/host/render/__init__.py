"""Tables to what a person reads: the spreadsheet, charts, report pages, the 2019 CSVs, and the
lines a run prints at its end."""
