"""The product at a real model's speed: one user's request per process (a container of its own),
against the fake server playing a speed profile, through the local runner as deployed."""
