"""What a study found, told to a person: the summary, live progress, the dashboard."""
