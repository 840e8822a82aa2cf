"""What a finished study produces: the tuned kernel source and the knowledge base."""
