"""Core app: health of the backing services, the home page and housekeeping commands."""
