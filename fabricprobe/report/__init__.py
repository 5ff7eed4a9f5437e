"""Read-only consumers of results files: terminal tables and exports."""
