"""Helpers the tests and reliability scripts share: a throwaway PostgreSQL server."""
