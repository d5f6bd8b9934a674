"""Two runs to verdicts and what changed between them (environment, software, machine), and the
files a comparison writes."""
