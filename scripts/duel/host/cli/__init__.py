"""The command line: one ``duel`` command whose subcommands show, compare and rebuild runs,
regenerate the locks and build or run the era images, with one table of exit codes for all."""
