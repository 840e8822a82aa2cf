"""Study specs: the file formats, each section's checks, loading, the copy stored
in a study, and the backend a spec names."""
