"""A turn sent through the router and read back: what the region said, what the caller heard."""
