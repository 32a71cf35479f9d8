"""baton: durable, resumable agent workflows with human-in-the-loop."""
