"""Where the edge keeps what outlives a request: in this process, or in the Redis every edge shares."""
